use ptslog_tests::TestServer;
use serde_json::json;

#[tokio::test]
async fn two_users_talk() {
    let s = TestServer::start().await;
    let alice = s.login("+15550001", "Alice").await;
    let bob = s.login("+15550002", "Bob").await;
    let to_bob = alice.peer_of("+15550002").await;
    let sent = alice.send(&to_bob, "hello bob").await;
    assert_eq!(sent["_"], "updateShortSentMessage");
    assert_eq!(sent["id"], 1);
    assert_eq!(sent["pts"], 1);
    let dialogs = bob.rpc("messages.getDialogs", json!({"limit": 10})).await;
    assert_eq!(dialogs["_"], "messages.dialogs");
    assert_eq!(dialogs["dialogs"][0]["unread_count"], 1);
    assert_eq!(dialogs["messages"][0]["message"], "hello bob");
    s.stop().await;
}
