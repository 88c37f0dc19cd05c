//! What was said while the gateway was stopped, after Slack stopped
//! retrying it: read back from the conversation's history when the next
//! socket says hello, answered once and in order; a message both the
//! history and a late retry bring is answered once.

use serde_json::json;

use super::*;
use crate::support::fake_slack::FakeSlack;
use crate::support::TestGateway;

fn said(fake: &FakeSlack, text: &str) -> Vec<usize> {
    let posted = fake.posted_in("D9");
    posted
        .iter()
        .enumerate()
        .filter(|(_, p)| p.text == text)
        .map(|(i, _)| i)
        .collect()
}

#[tokio::test]
async fn messages_sent_while_stopped_are_read_back_and_answered_once_in_order() {
    let fake = FakeSlack::start();
    let mut gw = TestGateway::with_config(slack_config(&fake, json!({})));
    assert!(connected(&fake).await);
    fake.message("D9", "im", USER, "hello", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: hello") == 1)
            .await
    );
    gw.stop();
    fake.message("D9", "im", USER, "while away one", None);
    fake.message("D9", "im", USER, "while away two", None);
    // Slack gave up retrying them: only the history has them.
    fake.expire_unacked();
    gw.resume();
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: while away two") == 1)
            .await,
        "{:?}",
        fake.posted()
    );
    assert!(!fake.calls("conversations.history").is_empty());
    // Stopped again: this one is in the history and still retried.
    gw.stop();
    fake.message("D9", "im", USER, "both ways", None);
    gw.resume();
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: both ways") == 1)
            .await
    );
    fake.message("D9", "im", USER, "barrier", None);
    assert!(
        fake.until(LONG, |f| answers(f, "D9", "You said: barrier") == 1)
            .await
    );
    let (one, two) = (
        said(&fake, "You said: while away one"),
        said(&fake, "You said: while away two"),
    );
    assert_eq!((one.len(), two.len()), (1, 1), "{:?}", fake.posted());
    assert!(one[0] < two[0], "in order: {:?}", fake.posted());
    assert_eq!(
        said(&fake, "You said: both ways").len(),
        1,
        "{:?}",
        fake.posted()
    );
    assert_eq!(
        said(&fake, "You said: hello").len(),
        1,
        "{:?}",
        fake.posted()
    );
}
