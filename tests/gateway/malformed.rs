//! Bad input after the handshake: every malformed frame gets a documented
//! error `res` (or, over maxPayload, close 1009), nothing panics, and other
//! clients keep being served. Inputs are generated with proptest.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

use crate::support::{admin, Client, TestGateway};

#[derive(Debug, Clone)]
enum Garbage {
    Text(String),
    Json(Value),
    Deep(usize),
    Bytes(Vec<u8>),
    HugeParam(usize),
    WrongTypes(Value),
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,40}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn garbage() -> impl Strategy<Value = Garbage> {
    prop_oneof![
        any::<String>().prop_map(Garbage::Text),
        json_value().prop_map(Garbage::Json),
        (100usize..20_000).prop_map(Garbage::Deep),
        proptest::collection::vec(any::<u8>(), 1..64)
            .prop_filter("invalid utf-8", |b| std::str::from_utf8(b).is_err())
            .prop_map(Garbage::Bytes),
        (1usize..4).prop_map(|mb| Garbage::HugeParam(mb * 200_000)),
        (json_value(), json_value()).prop_map(|(id, method)| Garbage::WrongTypes(
            json!({"type": "req", "id": id, "method": method})
        )),
    ]
}

fn is_documented_error(res: &Value) -> bool {
    let msg = res["error"]["message"].as_str().unwrap_or("");
    res["type"] == "res"
        && res["ok"] == false
        && res["error"]["code"] == "INVALID_REQUEST"
        && (msg.starts_with("invalid request frame")
            || msg.starts_with("unknown method: ")
            || msg.starts_with("invalid "))
}

#[tokio::test]
async fn malformed_frames_get_documented_errors_and_never_disturb_other_clients() {
    let gw = TestGateway::with_config(json!({"gateway": {"maxPayload": 2_000_000}}));
    let mut bystander = admin(&gw).await;
    let mut c = admin(&gw).await;
    let mut runner = crate::support::seeded_runner(crate::support::test_seed("malformed"), 120);
    let strategy = garbage();
    for case in 0..120 {
        let g = strategy.new_tree(&mut runner).unwrap().current();
        let expect_res = match &g {
            Garbage::Text(s) => {
                if crate::support::client::is_valid_request(s) {
                    continue;
                }
                c.send_text(s).await;
                true
            }
            Garbage::Json(v) => {
                c.send_text(&v.to_string()).await;
                true
            }
            Garbage::Deep(depth) => {
                c.send_text(&format!("{}{}", "[".repeat(*depth), "]".repeat(*depth)))
                    .await;
                true
            }
            Garbage::Bytes(b) => {
                c.send_raw(Message::binary(b.clone())).await;
                true
            }
            Garbage::HugeParam(n) => {
                let frame = json!({"type":"req","id":"huge","method":"no.such","params":{"blob":"y".repeat(*n)}});
                c.send_text(&frame.to_string()).await;
                true
            }
            Garbage::WrongTypes(v) => {
                c.send_text(&v.to_string()).await;
                true
            }
        };
        if expect_res {
            let res = c.recv_res().await;
            assert!(is_documented_error(&res), "case {case} {g:?}: {res}");
        }
        if case % 20 == 0 {
            assert_eq!(bystander.call("health", json!({})).await["ok"], true);
        }
    }
    // The connection that sent all of that is still open and served.
    assert_eq!(c.call("status", json!({})).await["ok"], true);

    // Over maxPayload: close 1009 for that socket only.
    let big =
        json!({"type":"req","id":"x","method":"health","params":{"blob":"z".repeat(2_100_000)}});
    c.send_text(&big.to_string()).await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1009);
    assert_eq!(bystander.call("health", json!({})).await["ok"], true);
    let mut again = Client::connect(&gw.ws_url()).await;
    assert_eq!(
        again
            .handshake(crate::support::connect_params(
                "cli",
                "cli",
                &[],
                Some(crate::support::TOKEN)
            ))
            .await["ok"],
        true
    );
}

#[tokio::test]
async fn non_request_frames_after_hello_get_an_error_with_their_id() {
    let gw = TestGateway::start();
    let mut c = admin(&gw).await;
    c.send_text(r#"{"type":"event","id":"e1","event":"x"}"#)
        .await;
    let res = c.recv_res().await;
    assert_eq!(res["id"], "e1");
    assert!(res["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("invalid request frame: "));
    c.send_text("not json").await;
    let res = c.recv_res().await;
    assert_eq!(res["id"], "invalid");
    assert_eq!(c.call("health", json!({})).await["ok"], true);
}

#[tokio::test]
async fn a_text_frame_that_is_not_utf8_closes_1007_and_nobody_else_notices() {
    use crate::support::raw_ws::{header, text_frame, RawWs, ServerFrame};
    let gw = TestGateway::start();
    let mut bystander = admin(&gw).await;
    for bad in [
        &[0xff_u8, 0xfe][..],
        &[b'{', 0xc3, 0x28, b'}'],
        &[0xe2, 0x82],
    ] {
        let mut raw = RawWs::connect(gw.addr).await;
        let challenge = raw.frame().await;
        assert!(
            matches!(challenge, Some(ServerFrame::Text(_))),
            "{challenge:?}"
        );
        let mut p = crate::support::connect_params(
            "cli",
            "cli",
            &["operator.read"],
            Some(crate::support::TOKEN),
        );
        p = json!({"type": "req", "id": "c1", "method": "connect", "params": p});
        raw.write(&text_frame(&p.to_string())).await.unwrap();
        let hello = raw.frame().await;
        assert!(
            matches!(&hello, Some(ServerFrame::Text(t)) if t.contains("hello-ok")),
            "{hello:?}"
        );
        let mut frame = header(true, 1, bad.len() as u64);
        frame.extend_from_slice(bad);
        raw.write(&frame).await.unwrap();
        let closed = raw.until_close().await;
        assert_eq!(
            closed.as_ref().map(|(c, _)| *c),
            Some(1007),
            "{bad:?}: a close frame, not a dropped socket: {closed:?}"
        );
        assert_eq!(bystander.call("health", json!({})).await["ok"], true);
    }
}
