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

fn phones(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| p.to_string()).collect()
}

#[tokio::test]
async fn phone_lookups_allow_exactly_the_limit_of_distinct_numbers() {
    use infrastructure::redis_rate_limiter::PHONE_LOOKUP_WINDOW_SECS as DAY;
    let limiter = RedisRateLimiter::new(&redis_url(), prefix(), 0)
        .unwrap()
        .with_phone_lookups_per_day(3);
    let user = fresh_user();
    // 100 s into a day's window.
    let now = 1_700_000_000 - 1_700_000_000 % DAY + 100;
    let at = |list: &'static [&'static str]| {
        let limiter = &limiter;
        async move {
            limiter
                .check_phone_lookups_at(user, &phones(list), now)
                .await
        }
    };
    assert_eq!(at(&["+1", "+2"]).await, Ok(vec![true, true]));
    // The third new number fits, the fourth does not; known ones are free.
    assert_eq!(at(&["+3", "+4", "+1"]).await, Ok(vec![true, false, true]));
    assert_eq!(at(&["+4"]).await, Err(u32::try_from(DAY - 100).unwrap()));
    assert_eq!(at(&["+2", "+3"]).await, Ok(vec![true, true]));
    // Another user, and the next window, start afresh.
    let other = limiter
        .check_phone_lookups_at(fresh_user(), &phones(&["+4", "+5", "+6"]), now)
        .await;
    assert_eq!(other, Ok(vec![true; 3]));
    let tomorrow = limiter
        .check_phone_lookups_at(user, &phones(&["+4"]), now - 100 + DAY)
        .await;
    assert_eq!(tomorrow, Ok(vec![true]));
    // The real clock works the same way.
    assert_eq!(
        limiter
            .check_phone_lookups(fresh_user(), &phones(&["+1"]))
            .await,
        Ok(vec![true])
    );
}

#[tokio::test]
async fn phone_lookups_fail_open_without_redis_and_zero_is_off() {
    let down = RedisRateLimiter::new("redis://127.0.0.1:1", prefix(), 0)
        .unwrap()
        .with_phone_lookups_per_day(1);
    let started = Instant::now();
    for n in 0..5 {
        let phone = phones(&[&format!("+{n}")]);
        assert_eq!(
            down.check_phone_lookups(fresh_user(), &phone).await,
            Ok(vec![true])
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let off = RedisRateLimiter::new(&redis_url(), prefix(), 0)
        .unwrap()
        .with_phone_lookups_per_day(0);
    let user = fresh_user();
    for n in 0..20 {
        let phone = phones(&[&format!("+{n}")]);
        assert_eq!(off.check_phone_lookups(user, &phone).await, Ok(vec![true]));
    }
}
