use application::ports::{Accounts, Store};

use crate::common::TestDb;

#[tokio::test]
async fn accounts() {
    let db = TestDb::new().await;
    login_creates_once_and_tokens_authenticate(&db).await;
    concurrent_first_logins_make_one_account(&db).await;
    db.drop().await;
}

async fn login_creates_once_and_tokens_authenticate(db: &TestDb) {
    let (first, token1) = db.accounts.login("+300", "Ann", "Lee").await.unwrap();
    let (again, token2) = db.accounts.login("+300", "Other", "Name").await.unwrap();
    assert_eq!(first, again);
    assert_eq!(again.first_name, "Ann");
    assert_ne!(token1, token2);
    assert_eq!(token1.len(), 64);
    assert!(token1.chars().all(|c| c.is_ascii_hexdigit()));

    let c1 = db
        .accounts
        .authenticate(&token1)
        .await
        .unwrap()
        .expect("token 1");
    let c2 = db
        .accounts
        .authenticate(&token2)
        .await
        .unwrap()
        .expect("token 2");
    assert_eq!(c1.user_id, first.id);
    assert_ne!(c1.auth_key_id, c2.auth_key_id);
    assert_ne!(c1.auth_key_id.0, 0);
    assert_eq!(c1.session_id.0, c1.auth_key_id.0);
    assert!(db.accounts.authenticate("nope").await.unwrap().is_none());

    let stored: Vec<u8> =
        sqlx::query_scalar("SELECT token_hash FROM authorizations WHERE auth_key_id = $1")
            .bind(c1.auth_key_id.0)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 32);

    assert_eq!(db.store.pts(first.id).await.unwrap().get(), 0);
    assert_eq!(
        db.store.user_by_phone("+300").await.unwrap(),
        Some(first.clone())
    );
    assert_eq!(db.store.user_by_phone("+3000").await.unwrap(), None);
    assert_eq!(db.store.users(&[first.id]).await.unwrap(), vec![first]);

    let key = infrastructure::access_hash_key(&db.pool).await.unwrap();
    let other = infrastructure::access_hash_key(&db.pool).await.unwrap();
    assert_eq!(
        key.for_pair(c1.user_id, c1.user_id),
        other.for_pair(c1.user_id, c1.user_id)
    );
}

async fn concurrent_first_logins_make_one_account(db: &TestDb) {
    let logins: Vec<_> = (0..8)
        .map(|_| {
            let accounts = db.accounts.clone();
            tokio::spawn(async move { accounts.login("+301", "A", "").await })
        })
        .collect();
    let mut ids = Vec::new();
    for l in logins {
        ids.push(l.await.unwrap().unwrap().0.id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
    let sequences: i64 =
        sqlx::query_scalar("SELECT count(*) FROM user_sequences WHERE user_id = $1")
            .bind(ids[0].get())
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(sequences, 1);
}
