//! Stable sorting by an integer key, for the few short lists the crate sorts (tools mentioned
//! in a message, tool calls in a response, thread summaries). `slice::sort_by_key` would do,
//! but every element type gets its own copy of core's driftsort (~4 KB of wasm each); here
//! only the (key, index) pairs are sorted, by one small merge sort.

/// Sorts `items` by `key`, keeping the order of equal keys (like `sort_by_key`).
pub fn sort_by_key<T>(items: &mut Vec<T>, key: impl Fn(&T) -> u64) {
    let mut order: Vec<(u64, usize)> = items.iter().map(&key).zip(0..).collect();
    merge_sort(&mut order);
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(order.into_iter().filter_map(|(_, i)| slots[i].take()));
}

/// `f64`s as keys in `f64::total_cmp` order.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))] // used by the wasm glue
pub fn f64_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// Bottom-up merge sort of (key, index) pairs; the indices are distinct, so the result is
/// the stable order of the keys.
fn merge_sort(a: &mut Vec<(u64, usize)>) {
    let n = a.len();
    let mut buf = a.clone();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            for slot in &mut buf[start..end] {
                if j >= end || (i < mid && a[i] <= a[j]) {
                    *slot = a[i];
                    i += 1;
                } else {
                    *slot = a[j];
                    j += 1;
                }
            }
            start = end;
        }
        std::mem::swap(a, &mut buf);
        width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_order_as_std_stable_sort() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for n in 0..200usize {
            let items: Vec<(u64, usize)> = (0..n)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % 7, i)
                })
                .collect();
            let mut ours = items.clone();
            sort_by_key(&mut ours, |x| x.0);
            let mut theirs = items;
            theirs.sort_by_key(|x| x.0);
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn f64_keys_follow_total_cmp() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -0.0,
            0.0,
            1e-300,
            1.5,
            1.7e308,
            f64::INFINITY,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(f64_key(a).cmp(&f64_key(b)), a.total_cmp(&b), "{a} {b}");
            }
        }
    }
}
