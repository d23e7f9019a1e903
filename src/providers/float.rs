//! `f64` from text, with exactly the grammar and the rounding of `str::parse::<f64>`, for the
//! few places that read numbers out of text (the demo model's number tokens, fractional
//! `Retry-After` seconds). core's parser carries ~16 KB of tables and code into the wasm for
//! speed we do not need here; this one compares the decimal with the midpoints between
//! neighbouring doubles exactly, in big integers, and binary-searches the double.

use std::cmp::Ordering;

/// At most this many significant digits are kept; the rest only count as "some nonzero
/// digit" (a midpoint between two doubles has at most 767 significant digits, so further
/// digits cannot change the rounding, as in core's own slow path).
const MAX_DIGITS: usize = 800;

/// `s.parse::<f64>().ok()`: `[+-]` then `inf`, `infinity`, `nan` (any case) or
/// `digits[.digits][(e|E)[+-]digits]` with digits on at least one side of the point;
/// correctly rounded (ties to even, overflow to infinity).
pub fn parse_f64(s: &str) -> Option<f64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let magnitude = if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        f64::INFINITY
    } else if rest.eq_ignore_ascii_case("nan") {
        f64::NAN
    } else {
        decimal(rest.as_bytes())?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn decimal(b: &[u8]) -> Option<f64> {
    let mut digits: Vec<u8> = Vec::new(); // significant digits, no leading zeros
    let mut exp: i64 = 0; // value = digits × 10^exp
    let mut any = false;
    let mut i = 0;
    let mut fraction = false;
    while i < b.len() {
        match b[i] {
            d @ b'0'..=b'9' => {
                any = true;
                if d != b'0' || !digits.is_empty() {
                    digits.push(d - b'0');
                }
                if fraction {
                    exp -= 1;
                }
            }
            b'.' if !fraction => fraction = true,
            _ => break,
        }
        i += 1;
    }
    if !any {
        return None;
    }
    if i < b.len() {
        if b[i] | 0x20 != b'e' {
            return None;
        }
        i += 1;
        let negative = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        if i == b.len() {
            return None;
        }
        let mut e: i64 = 0;
        for &d in &b[i..] {
            if !d.is_ascii_digit() {
                return None;
            }
            // Saturates far beyond any double's range.
            e = (e * 10 + i64::from(d - b'0')).min(1 << 40);
        }
        exp += if negative { -e } else { e };
    }
    if digits.len() > MAX_DIGITS {
        let sticky = digits[MAX_DIGITS..].iter().any(|&d| d != 0);
        exp += (digits.len() - MAX_DIGITS) as i64;
        digits.truncate(MAX_DIGITS);
        if sticky {
            digits.push(1);
            exp -= 1;
        }
    }
    if digits.is_empty() {
        return Some(0.0);
    }
    // 10^(n+exp-1) <= value < 10^(n+exp): far outside the doubles, no search needed.
    let magnitude = digits.len() as i64 + exp;
    if magnitude > 310 {
        return Some(f64::INFINITY);
    }
    if magnitude < -330 {
        return Some(0.0);
    }
    // value = numerator / denominator, both integers.
    let mut numerator = Big::from_digits(&digits);
    let mut denominator = Big(vec![1]);
    if exp >= 0 {
        numerator.mul_pow10(exp as u32);
    } else {
        denominator.mul_pow10((-exp) as u32);
    }
    // The double is the smallest bit pattern whose upper midpoint lies above the value (or on
    // it, for an even pattern); patterns of non-negative doubles are ordered like their values.
    let (mut lo, mut hi) = (0u64, f64::INFINITY.to_bits());
    while lo < hi {
        let bits = lo + (hi - lo) / 2;
        let below_midpoint = match compare_with_midpoint(&numerator, &denominator, bits) {
            Ordering::Less => true,
            Ordering::Equal => bits & 1 == 0,
            Ordering::Greater => false,
        };
        if below_midpoint {
            hi = bits;
        } else {
            lo = bits + 1;
        }
    }
    Some(f64::from_bits(lo))
}

/// numerator/denominator against the midpoint between the double `bits` and the next one up,
/// `(2m + 1) · 2^(k-1)` for the double `m · 2^k`.
fn compare_with_midpoint(numerator: &Big, denominator: &Big, bits: u64) -> Ordering {
    let field = (bits >> 52) as i64;
    let fraction = bits & ((1 << 52) - 1);
    let (m, k) = if field == 0 {
        (fraction, -1074)
    } else {
        (fraction | 1 << 52, field - 1075)
    };
    let mut left = numerator.clone();
    let mut right = denominator.clone();
    right.mul_small(2 * m + 1);
    let shift = k - 1;
    if shift >= 0 {
        right.shl(shift as u32);
    } else {
        left.shl((-shift) as u32);
    }
    left.cmp(&right)
}

/// An unsigned big integer, little-endian 32-bit limbs.
#[derive(Clone)]
struct Big(Vec<u32>);

impl Big {
    fn from_digits(digits: &[u8]) -> Big {
        let mut n = Big(Vec::new());
        for chunk in digits.chunks(9) {
            let mut value = 0u64;
            for &d in chunk {
                value = value * 10 + u64::from(d);
            }
            n.mul_small(10u64.pow(chunk.len() as u32));
            n.add_small(value);
        }
        n
    }

    fn mul_small(&mut self, factor: u64) {
        let mut carry = 0u128;
        for limb in &mut self.0 {
            let product = u128::from(*limb) * u128::from(factor) + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        while carry > 0 {
            self.0.push(carry as u32);
            carry >>= 32;
        }
    }

    fn add_small(&mut self, mut value: u64) {
        for limb in &mut self.0 {
            if value == 0 {
                return;
            }
            let sum = u64::from(*limb) + value;
            *limb = sum as u32;
            value = sum >> 32;
        }
        while value > 0 {
            self.0.push(value as u32);
            value >>= 32;
        }
    }

    fn mul_pow10(&mut self, mut n: u32) {
        while n >= 19 {
            self.mul_small(10u64.pow(19));
            n -= 19;
        }
        self.mul_small(10u64.pow(n));
    }

    fn shl(&mut self, bits: u32) {
        let (limbs, bits) = ((bits / 32) as usize, bits % 32);
        if bits > 0 {
            let mut carry = 0u32;
            for limb in &mut self.0 {
                let next = *limb >> (32 - bits);
                *limb = (*limb << bits) | carry;
                carry = next;
            }
            if carry > 0 {
                self.0.push(carry);
            }
        }
        if limbs > 0 {
            let mut shifted = vec![0; limbs];
            shifted.extend_from_slice(&self.0);
            self.0 = shifted;
        }
    }

    fn significant(&self) -> &[u32] {
        let len = self.0.iter().rposition(|&l| l != 0).map_or(0, |i| i + 1);
        &self.0[..len]
    }

    fn cmp(&self, other: &Big) -> Ordering {
        let (a, b) = (self.significant(), other.significant());
        a.len()
            .cmp(&b.len())
            .then_with(|| a.iter().rev().cmp(b.iter().rev()))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_f64;

    fn same(s: &str) {
        let want = s.parse::<f64>().ok();
        let got = parse_f64(s);
        match (want, got) {
            (Some(w), Some(g)) if w.is_nan() && g.is_nan() => {}
            (Some(w), Some(g)) => assert_eq!(w.to_bits(), g.to_bits(), "{s:?}: {w:e} vs {g:e}"),
            (None, None) => {}
            _ => panic!("{s:?}: std {want:?}, ours {got:?}"),
        }
    }

    #[test]
    fn grammar_is_std_s() {
        for s in [
            "",
            ".",
            "+",
            "-",
            "e",
            "e5",
            "1e",
            "1e+",
            "1e-",
            "+.",
            "1.",
            ".5",
            "+.5e-3",
            "-0",
            "0",
            "00",
            "1_0",
            " 1",
            "1 ",
            "inf",
            "INF",
            "-Infinity",
            "infinit",
            "nan",
            "NaN",
            "+nan",
            "0x10",
            "1.2.3",
            "1e5.5",
            "1E5",
            "1e+05",
            "--1",
            "+-1",
            "1d",
            "١",
            "1e1e1",
            "12e",
            "..5",
            "5..",
            "0.",
            "-.0",
            "007",
            "1e-0",
            "e-5",
            "-e5",
        ] {
            same(s);
        }
    }

    #[test]
    fn values_are_correctly_rounded() {
        for s in [
            "2.5",
            "0.1",
            "1e23",
            "9007199254740993",
            "9007199254740995",
            "3.000000000000000444089209850062616169452667236328125",
            "3.0000000000000004440892098500626161694526672363281250000001",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "179769313486231580793728971405301e276",
            "2.2250738585072011e-308",
            "2.2250738585072012e-308",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1e-400",
            "1e400",
            "1e-99999999999999999999999",
            "1e99999999999999999999999",
            "0e99999999999999999999999",
            "12345678901234567890123",
            "0.000000000000000000000000000000000000000000001e45",
        ] {
            same(s);
        }
        // A long halfway case: 2^53 + 1 followed by many zeros and a final 1 (rounds up).
        same(&format!("9007199254740993.{}1", "0".repeat(900)));
        same(&format!("9007199254740993.{}", "0".repeat(900)));
        same(&format!("0.{}1e350", "0".repeat(1000)));
    }

    #[test]
    fn random_decimals_match_std() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5_000 {
            let int_len = next() % 22;
            let frac_len = next() % 22;
            let mut s = String::new();
            if next() % 4 == 0 {
                s.push('-');
            }
            for _ in 0..int_len {
                s.push(char::from(b'0' + (next() % 10) as u8));
            }
            if next() % 2 == 0 {
                s.push('.');
                for _ in 0..frac_len {
                    s.push(char::from(b'0' + (next() % 10) as u8));
                }
            }
            if next() % 2 == 0 {
                s.push('e');
                s.push_str(&((next() % 700) as i64 - 350).to_string());
            }
            same(&s);
        }
        // Doubles written in full and shortest form, and their neighbours' midpoints.
        for _ in 0..2_000 {
            let bits = next() & !(1 << 63);
            let x = f64::from_bits(bits);
            if !x.is_finite() {
                continue;
            }
            same(&format!("{x:e}"));
            same(&format!("{x:.30e}"));
            same(&format!("{x}"));
        }
    }
}
