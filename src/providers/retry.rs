//! How long to wait before sending a failed request again. Pure: the clock and the random
//! jitter are arguments, so the driver owns them and tests are exact.

use super::error::ProviderError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so at most `max_retries + 1` requests).
    pub max_retries: u32,
    /// The wait before the first retry; it doubles with each further one.
    pub base_delay_ms: u64,
    /// No wait is longer, whatever `Retry-After` asks for.
    pub max_delay_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay_ms: 500,
            max_delay_ms: 30_000,
        }
    }
}

impl RetryPolicy {
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        base_delay_ms: 0,
        max_delay_ms: 0,
    };

    /// The wait before retry number `attempt` (1 for the first retry; 0 counts as 1), or `None`
    /// when the retries are used up. `retry_after` is the raw `Retry-After` header: delay
    /// seconds or an HTTP-date (RFC 9110 §10.2.3), read against `now_ms` (Unix milliseconds).
    /// Without a usable one: exponential backoff, shortened by up to a quarter by
    /// `jitter_0_to_1` so that clients that failed together do not retry together.
    pub fn delay_ms(
        &self,
        attempt: u32,
        retry_after: Option<&str>,
        now_ms: u64,
        jitter_0_to_1: f64,
    ) -> Option<u64> {
        let attempt = attempt.max(1);
        if attempt > self.max_retries {
            return None;
        }
        if let Some(ms) = retry_after.and_then(|h| retry_after_ms(h, now_ms)) {
            return Some(ms.min(self.max_delay_ms));
        }
        let doublings = (attempt - 1).min(32);
        let full = self
            .base_delay_ms
            .saturating_mul(1u64 << doublings)
            .min(self.max_delay_ms);
        let jitter = if jitter_0_to_1.is_finite() {
            jitter_0_to_1.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Some(full - (full as f64 * 0.25 * jitter) as u64)
    }

    /// [`Self::delay_ms`] for an error: `None` also when the error is not worth retrying.
    pub fn delay_for(
        &self,
        err: &ProviderError,
        attempt: u32,
        now_ms: u64,
        jitter_0_to_1: f64,
    ) -> Option<u64> {
        if !err.retryable() {
            return None;
        }
        self.delay_ms(attempt, err.retry_after(), now_ms, jitter_0_to_1)
    }
}

/// Milliseconds to wait for a `Retry-After` value, `None` when it is neither form.
fn retry_after_ms(value: &str, now_ms: u64) -> Option<u64> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Too many digits for u64 is "a very long time": the cap applies.
        return Some(
            v.parse::<u64>()
                .map_or(u64::MAX, |s| s.saturating_mul(1000)),
        );
    }
    // Not in the RFC, but sent by some servers: fractional seconds, with digits on either
    // side of the point ("1.5", ".5", "2."), as `str::parse` reads them. serde_json's float
    // parser (already linked, correctly rounded) reads them once written as JSON numbers:
    // core's parser would add ~12 KB gzip to the wasm.
    if let Some((int, frac)) = v.split_once('.') {
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty()) {
            let int = int.trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            if let Ok(secs) = serde_json::from_str::<f64>(&format!("{int}.{frac}0")) {
                return Some((secs * 1000.0).ceil() as u64);
            }
        }
    }
    parse_http_date(v).map(|at| at.saturating_sub(now_ms))
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// An HTTP-date as Unix milliseconds: the IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and
/// the obsolete forms recipients must still accept, RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT`
/// (two-digit years 70–99 are 19xx, others 20xx) and asctime `Sun Nov  6 08:49:37 1994`.
/// Dates before 1970 read as 0. The day name is checked for spelling, not against the date.
///
/// Hand-written rather than the `httpdate` crate: swapped in (its `parse_http_date`, then
/// `duration_since(UNIX_EPOCH)`), the package's wasm grew from 205,466 to 207,016 bytes gzip
/// -9 (+1.5 KB; raw +3.3 KB), as it validates by formatting the date back, and it refuses
/// what this accepts (a day name that does not match the date, second 60, years before
/// 1970), which tests/fuzz_responses.rs pins.
pub fn parse_http_date(s: &str) -> Option<u64> {
    let s = s.trim();
    let (day, month, year, time) = if let Some((weekday, rest)) = s.split_once(", ") {
        let parts: Vec<&str> = rest.split(' ').collect();
        match parts.as_slice() {
            [d, m, y, t, "GMT"] if DAYS.contains(&weekday) && d.len() == 2 && y.len() == 4 => {
                (number(d)?, *m, number(y)?, *t)
            }
            [dmy, t, "GMT"] if LONG_DAYS.contains(&weekday) => {
                let mut it = dmy.split('-');
                let (d, m, y) = (it.next()?, it.next()?, it.next()?);
                if it.next().is_some() || d.len() != 2 || y.len() != 2 {
                    return None;
                }
                let yy = number(y)?;
                (
                    number(d)?,
                    m,
                    if yy >= 70 { 1900 + yy } else { 2000 + yy },
                    *t,
                )
            }
            _ => return None,
        }
    } else {
        let parts: Vec<&str> = s.split_whitespace().collect();
        match parts.as_slice() {
            [weekday, m, d, t, y] if DAYS.contains(weekday) && d.len() <= 2 && y.len() == 4 => {
                (number(d)?, *m, number(y)?, *t)
            }
            _ => return None,
        }
    };
    let month = MONTHS.iter().position(|m| *m == month)? as u64 + 1;
    let mut hms = time.split(':');
    let (h, m, sec) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some() || h.len() != 2 || m.len() != 2 || sec.len() != 2 {
        return None;
    }
    let (h, m, sec) = (number(h)?, number(m)?, number(sec)?);
    if day == 0 || day > days_in_month(year, month) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(year as i64, month, day);
    let secs = days * 86_400 + (h * 3600 + m * 60 + sec) as i64;
    Some(u64::try_from(secs).unwrap_or(0).saturating_mul(1000))
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_leap(y: u64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: u64, d: u64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_6_1994: u64 = 784_111_777_000;

    #[test]
    fn the_three_rfc_9110_forms() {
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(NOV_6_1994)
        );
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"),
            Some(NOV_6_1994)
        );
        assert_eq!(
            parse_http_date("Sun Nov  6 08:49:37 1994"),
            Some(NOV_6_1994)
        );
    }

    #[test]
    fn calendar_edges() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"),
            Some(1_709_164_800_000)
        );
        assert_eq!(parse_http_date("Thu, 29 Feb 2023 00:00:00 GMT"), None);
        assert_eq!(parse_http_date("Wed, 31 Dec 1969 23:59:59 GMT"), Some(0));
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in [
            "",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "1994-11-06T08:49:37Z",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad:?}");
        }
    }
}
