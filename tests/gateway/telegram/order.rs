//! A batch of messages fetched after the gateway was stopped is answered
//! in the order it was sent (issue 56's fault: 6 rounds of 4 messages from
//! one sender came back as `[0,1,3,2]`, `[0,3,1,2]`, `[1,0,2,3]`): each
//! chat's replies go out in the order of the messages they answer, with
//! either DM scope.

use serde_json::json;

use super::*;
use crate::support::fake_telegram::FakeTelegram;
use crate::support::TestGateway;

const ROUNDS: usize = 3;
const BATCH: i64 = 4;

async fn rounds_answer_in_order(dm_scope: &str) {
    let fake = FakeTelegram::start(BOT_TOKEN);
    let mut cfg = telegram_config(&fake, json!({ "streamMode": "off" }));
    cfg["session"] = json!({ "dmScope": dm_scope });
    cfg["messages"] = json!({ "queue": { "mode": "followup", "debounceMs": 0 } });
    let mut gw = TestGateway::with_config(cfg);
    fake.dm(42, 1, "warm up");
    assert!(
        fake.until(LONG, |f| answers(f, 42, "You said: warm up") == 1)
            .await
    );
    let mut id = 10;
    for round in 0..ROUNDS {
        gw.stop();
        let sent: Vec<String> = (0..BATCH)
            .map(|i| {
                id += 1;
                let text = format!("round {round} message {i}");
                fake.dm(42, id, &text);
                format!("You said: {text}")
            })
            .collect();
        gw.resume();
        let prefix = format!("You said: round {round} ");
        let replies = |f: &FakeTelegram| -> Vec<String> {
            f.sent_to(42)
                .into_iter()
                .map(|s| s.text)
                .filter(|t| t.starts_with(&prefix))
                .collect()
        };
        assert!(
            fake.until(LONG, |f| replies(f).len() == sent.len()).await,
            "{dm_scope}: round {round}: {:?}",
            replies(&fake)
        );
        assert_eq!(replies(&fake), sent, "{dm_scope}: round {round}");
    }
}

#[tokio::test]
async fn a_batch_fetched_after_a_stop_is_answered_in_order_in_the_main_session() {
    rounds_answer_in_order("main").await;
}

#[tokio::test]
async fn a_batch_fetched_after_a_stop_is_answered_in_order_per_channel_peer() {
    rounds_answer_in_order("per-channel-peer").await;
}
