//! A `/sync` answer read into plain types: `next_batch`, the timeline
//! events of joined rooms in order, the invites (who invited, and whether
//! as a direct chat), the rooms whose timeline has a gap (`limited`, from
//! its `prev_batch`), and
//! member counts. Also the filter ferroclaw syncs with (no presence, no
//! account data it does not read, a room timeline of up to 200 events).

use serde_json::{json, Value};

/// The filter of every `/sync`.
pub fn filter() -> String {
    json!({
        "presence": { "types": [] },
        "account_data": { "types": [] },
        "room": {
            "timeline": { "limit": 200, "types": ["m.room.message", "m.room.member"] },
            "state": { "types": ["m.room.member", "m.room.encryption"], "lazy_load_members": true },
            "ephemeral": { "types": [] },
            "account_data": { "types": [] },
        },
    })
    .to_string()
}

#[derive(Debug, Clone, PartialEq)]
pub struct RoomEvent {
    pub room: String,
    pub event: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Invite {
    pub room: String,
    pub inviter: Option<String>,
    pub is_direct: bool,
}

/// A room's timeline gap: `/messages` read backwards from `from` (the
/// timeline's `prev_batch`) gives what it skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub room: String,
    pub from: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub next: String,
    pub events: Vec<RoomEvent>,
    pub invites: Vec<Invite>,
    /// Rooms whose timeline skipped events (more than the filter's limit
    /// arrived since the last sync), with where the skipped part ends.
    pub limited: Vec<Gap>,
    /// Joined + invited members, where the answer says.
    pub members: Vec<(String, u64)>,
    /// Rooms that turned on encryption (not read: said once).
    pub encrypted: Vec<String>,
}

/// A `/sync` answer with nowhere to go on from.
#[derive(Debug, thiserror::Error)]
#[error("a sync answer without next_batch")]
pub struct NoNextBatch;

/// Reads a `/sync` answer for the user `me`.
pub fn read(v: &Value, me: &str) -> Result<Batch, NoNextBatch> {
    let next = v["next_batch"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or(NoNextBatch)?
        .to_string();
    let mut b = Batch {
        next,
        ..Batch::default()
    };
    if let Some(joined) = v["rooms"]["join"].as_object() {
        for (room, r) in joined {
            if r["timeline"]["limited"] == true {
                b.limited.push(Gap {
                    room: room.clone(),
                    from: r["timeline"]["prev_batch"].as_str().map(str::to_string),
                });
            }
            let s = &r["summary"];
            let count = s["m.joined_member_count"]
                .as_u64()
                .zip(s["m.invited_member_count"].as_u64().or(Some(0)))
                .map(|(j, i)| j + i);
            if let Some(n) = count {
                b.members.push((room.clone(), n));
            }
            let state = r["state"]["events"].as_array().into_iter().flatten();
            let timeline = r["timeline"]["events"].as_array().into_iter().flatten();
            if state
                .chain(timeline.clone())
                .any(|e| e["type"] == "m.room.encryption")
            {
                b.encrypted.push(room.clone());
            }
            for e in timeline {
                b.events.push(RoomEvent {
                    room: room.clone(),
                    event: e.clone(),
                });
            }
        }
    }
    if let Some(invited) = v["rooms"]["invite"].as_object() {
        for (room, r) in invited {
            let me_member = r["invite_state"]["events"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["type"] == "m.room.member" && e["state_key"] == me);
            b.invites.push(Invite {
                room: room.clone(),
                inviter: me_member.and_then(|e| e["sender"].as_str().map(str::to_string)),
                is_direct: me_member.is_some_and(|e| e["content"]["is_direct"] == true),
            });
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_timelines_invites_gaps_and_counts_read_from_a_sync_answer() {
        let v = json!({ "next_batch": "s72_5", "rooms": {
            "join": { "!a:hs": {
                "summary": { "m.joined_member_count": 2, "m.invited_member_count": 0 },
                "timeline": { "limited": true, "prev_batch": "t9", "events": [
                    { "type": "m.room.message", "event_id": "$1", "sender": "@u:hs",
                      "content": { "msgtype": "m.text", "body": "hi" } } ] } } },
            "invite": { "!b:hs": { "invite_state": { "events": [
                { "type": "m.room.member", "state_key": "@bot:hs", "sender": "@u:hs",
                  "content": { "membership": "invite", "is_direct": true } } ] } } } } });
        let b = read(&v, "@bot:hs").unwrap();
        assert_eq!(b.next, "s72_5");
        assert_eq!(b.events.len(), 1);
        assert_eq!(b.events[0].room, "!a:hs");
        let gap = Gap {
            room: "!a:hs".into(),
            from: Some("t9".into()),
        };
        assert_eq!(b.limited, [gap]);
        assert_eq!(b.members, [("!a:hs".to_string(), 2)]);
        assert_eq!(
            b.invites,
            [Invite {
                room: "!b:hs".into(),
                inviter: Some("@u:hs".into()),
                is_direct: true
            }]
        );
        assert!(read(&json!({ "rooms": {} }), "@bot:hs").is_err());
    }
}
