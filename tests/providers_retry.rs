//! Retry delays: Retry-After as seconds or an HTTP-date, exponential backoff with jitter, and
//! the point where retries are used up.

use gatehouse_agent::providers::{ProviderError, RetryPolicy};

/// 2026-10-21T07:28:00Z.
const NOW: u64 = 1_792_567_680_000;

#[test]
fn retry_after_in_seconds() {
    let p = RetryPolicy::default();
    assert_eq!(p.delay_ms(1, Some("7"), NOW, 0.9), Some(7_000));
    assert_eq!(p.delay_ms(1, Some(" 0 "), NOW, 0.9), Some(0));
    // Capped at max_delay, however long the server asks.
    assert_eq!(p.delay_ms(1, Some("3600"), NOW, 0.0), Some(30_000));
    assert_eq!(
        p.delay_ms(1, Some("99999999999999999999999"), NOW, 0.0),
        Some(30_000)
    );
    // Not in the RFC but seen in the wild.
    assert_eq!(p.delay_ms(1, Some("1.5"), NOW, 0.0), Some(1_500));
}

#[test]
fn retry_after_as_an_http_date() {
    let p = RetryPolicy::default();
    assert_eq!(
        p.delay_ms(2, Some("Wed, 21 Oct 2026 07:28:12 GMT"), NOW, 0.5),
        Some(12_000)
    );
    // The obsolete forms RFC 9110 still asks recipients to read.
    assert_eq!(
        p.delay_ms(2, Some("Wednesday, 21-Oct-26 07:28:05 GMT"), NOW, 0.5),
        Some(5_000)
    );
    assert_eq!(
        p.delay_ms(2, Some("Wed Oct 21 07:28:03 2026"), NOW, 0.5),
        Some(3_000)
    );
    // A date in the past means "now".
    assert_eq!(
        p.delay_ms(1, Some("Tue, 20 Oct 2026 07:28:00 GMT"), NOW, 0.5),
        Some(0)
    );
    // Far future: capped.
    assert_eq!(
        p.delay_ms(1, Some("Thu, 01 Jan 2099 00:00:00 GMT"), NOW, 0.5),
        Some(30_000)
    );
}

#[test]
fn exponential_backoff_without_retry_after() {
    let p = RetryPolicy::default();
    // No jitter: 500, 1000, 2000.
    assert_eq!(p.delay_ms(1, None, NOW, 0.0), Some(500));
    assert_eq!(p.delay_ms(2, None, NOW, 0.0), Some(1_000));
    assert_eq!(p.delay_ms(3, None, NOW, 0.0), Some(2_000));
    // Full jitter takes off a quarter.
    assert_eq!(p.delay_ms(1, None, NOW, 1.0), Some(375));
    assert_eq!(p.delay_ms(3, None, NOW, 0.5), Some(1_750));
    // Out-of-range jitter is clamped; NaN counts as none.
    assert_eq!(p.delay_ms(1, None, NOW, 7.0), Some(375));
    assert_eq!(p.delay_ms(1, None, NOW, f64::NAN), Some(500));
    // An unreadable Retry-After falls back to backoff.
    assert_eq!(p.delay_ms(2, Some("soon"), NOW, 0.0), Some(1_000));
    // Growth stops at max_delay.
    let many = RetryPolicy {
        max_retries: 100,
        ..RetryPolicy::default()
    };
    assert_eq!(many.delay_ms(7, None, NOW, 0.0), Some(30_000));
    assert_eq!(many.delay_ms(100, None, NOW, 0.0), Some(30_000));
}

#[test]
fn exhausted_retries() {
    let p = RetryPolicy::default();
    assert!(p.delay_ms(3, None, NOW, 0.0).is_some());
    assert_eq!(p.delay_ms(4, None, NOW, 0.0), None);
    assert_eq!(p.delay_ms(4, Some("1"), NOW, 0.0), None);
    assert_eq!(RetryPolicy::NONE.delay_ms(1, Some("1"), NOW, 0.0), None);
}

#[test]
fn delay_for_an_error() {
    let p = RetryPolicy::default();
    let rate_limited = ProviderError::http(429, "{}", Some("2"));
    assert_eq!(p.delay_for(&rate_limited, 1, NOW, 0.0), Some(2_000));
    let unauthorized = ProviderError::http(401, "{}", Some("2"));
    assert_eq!(p.delay_for(&unauthorized, 1, NOW, 0.0), None);
    let cut = ProviderError::Truncated { detail: "x".into() };
    assert_eq!(p.delay_for(&cut, 2, NOW, 0.0), Some(1_000));
}
