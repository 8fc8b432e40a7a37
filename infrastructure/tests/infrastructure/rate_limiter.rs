use std::time::{Duration, Instant};

use application::ports::RateLimiter;
use domain::UserId;
use infrastructure::RedisRateLimiter;

use crate::common::redis_url;

fn fresh_user() -> UserId {
    UserId::new(1 + (rand::random::<u32>() as i64)).unwrap()
}

fn prefix() -> String {
    format!("ptslog_test_{:x}:", rand::random::<u64>())
}

#[tokio::test]
async fn allows_exactly_the_limit_then_asks_to_wait() {
    let limiter = RedisRateLimiter::new(&redis_url(), prefix(), 5).unwrap();
    let user = fresh_user();
    // A fixed clock, 10 s into a window, so the test cannot straddle a window boundary.
    let now = 1_700_000_000 - 1_700_000_000 % 60 + 10;
    for _ in 0..5 {
        assert_eq!(limiter.check_send_at(user, 1, now).await, Ok(()));
    }
    assert_eq!(limiter.check_send_at(user, 1, now).await, Err(50));
    assert_eq!(limiter.check_send_at(user, 1, now + 49).await, Err(1));
    // Another user and the next window have their own counts.
    assert_eq!(limiter.check_send_at(fresh_user(), 5, now).await, Ok(()));
    assert_eq!(limiter.check_send_at(user, 5, now + 50).await, Ok(()));
    assert_eq!(limiter.check_send_at(user, 1, now + 50).await, Err(60));
    // Several sends at once count as several.
    let other = fresh_user();
    assert_eq!(limiter.check_send_at(other, 4, now).await, Ok(()));
    assert_eq!(limiter.check_send_at(other, 2, now).await, Err(50));
    // The real clock works the same way.
    assert_eq!(limiter.check_send(fresh_user(), 1).await, Ok(()));
}

#[tokio::test]
async fn zero_limit_is_off() {
    let limiter = RedisRateLimiter::new(&redis_url(), prefix(), 0).unwrap();
    let user = fresh_user();
    for _ in 0..50 {
        assert_eq!(limiter.check_send(user, 10).await, Ok(()));
    }
}

#[tokio::test]
async fn unreachable_redis_fails_open_quickly() {
    let limiter = RedisRateLimiter::new("redis://127.0.0.1:1", prefix(), 1).unwrap();
    let user = fresh_user();
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(limiter.check_send(user, 1).await, Ok(()));
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}
