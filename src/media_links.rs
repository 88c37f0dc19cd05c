//! Signed links to stored media: `/media/<id>?exp=<unix s>&sig=<hex>`.
//! `chat.history` puts one on each stored image (and file) of a message,
//! so OpenClaw's Control UI, which shows an image by its URL in an
//! `<img>` that cannot send the gateway token, can show the original. The
//! signature is HMAC-SHA256 over the id and the expiry with a key made at
//! start (links die with the process; a reconnecting UI reloads history and
//! gets new ones). A link is good for one to two hours: the expiry is
//! rounded up to the hour so the same file keeps the same link for an
//! hour (the browser's cache and the UI see one URL).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// How long a link is good for, at least (seconds); at most twice that.
const VALID_S: u64 = 3600;

pub struct MediaLinks {
    key: String,
}

impl MediaLinks {
    /// With a fresh random key (32 bytes from the OS, as a device token).
    pub fn new() -> MediaLinks {
        MediaLinks {
            key: ferroclaw_actors::devices::random_token(),
        }
    }

    fn mac(&self, id: &str, exp: u64) -> Option<Hmac<Sha256>> {
        let mut m = <Hmac<Sha256> as Mac>::new_from_slice(self.key.as_bytes()).ok()?;
        m.update(id.as_bytes());
        m.update(b"\0");
        m.update(exp.to_string().as_bytes());
        Some(m)
    }

    /// The signed link to stored file `id`, good from `now_s` (unix seconds).
    pub fn url_at(&self, id: &str, now_s: u64) -> String {
        let exp = (now_s / VALID_S + 2) * VALID_S;
        let sig = self
            .mac(id, exp)
            .map(|m| hex(&m.finalize().into_bytes()))
            .unwrap_or_default();
        format!("/media/{id}?exp={exp}&sig={sig}")
    }

    pub fn url(&self, id: &str) -> String {
        self.url_at(id, now_s())
    }

    /// Whether `exp` and `sig` (a link's query) let `id` be read at `now_s`.
    pub fn check_at(&self, id: &str, exp: &str, sig: &str, now_s: u64) -> bool {
        let Ok(exp) = exp.parse::<u64>() else {
            return false;
        };
        let Some(sig) = unhex(sig) else {
            return false;
        };
        exp > now_s
            && exp <= now_s + 2 * VALID_S
            && self
                .mac(id, exp)
                .is_some_and(|m| m.verify_slice(&sig).is_ok())
    }

    pub fn check(&self, id: &str, exp: &str, sig: &str) -> bool {
        self.check_at(id, exp, sig, now_s())
    }
}

impl Default for MediaLinks {
    fn default() -> Self {
        MediaLinks::new()
    }
}

fn now_s() -> u64 {
    ferroclaw_actors::now_ms() / 1000
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(url: &str) -> (String, String, String) {
        let (path, query) = url.split_once('?').unwrap();
        let id = path.strip_prefix("/media/").unwrap().to_string();
        let mut exp = String::new();
        let mut sig = String::new();
        for kv in query.split('&') {
            match kv.split_once('=').unwrap() {
                ("exp", v) => exp = v.into(),
                ("sig", v) => sig = v.into(),
                _ => panic!("{kv}"),
            }
        }
        (id, exp, sig)
    }

    #[test]
    fn a_link_opens_its_file_only_until_it_expires() {
        let links = MediaLinks::new();
        let id = "ab".repeat(32);
        let now = 1_800_000_000;
        let url = links.url_at(&id, now);
        assert_eq!(url, links.url_at(&id, now + 1), "stable within the hour");
        let (got, exp, sig) = parts(&url);
        assert_eq!(got, id);
        assert!(links.check_at(&id, &exp, &sig, now));
        assert!(links.check_at(&id, &exp, &sig, now + VALID_S - 1));
        assert!(!links.check_at(&id, &exp, &sig, now + 2 * VALID_S));
        // Another file, another expiry, another key: refused.
        assert!(!links.check_at(&"cd".repeat(32), &exp, &sig, now));
        let later = (exp.parse::<u64>().unwrap() + VALID_S).to_string();
        assert!(!links.check_at(&id, &later, &sig, now));
        assert!(!MediaLinks::new().check_at(&id, &exp, &sig, now));
        // Garbage is refused, never a panic.
        for (e, s) in [
            ("", ""),
            ("x", &sig),
            (exp.as_str(), "zz"),
            (&exp, "é".repeat(32).as_str()),
        ] {
            assert!(!links.check_at(&id, e, s, now));
        }
        // An expiry far in the future was never made here.
        let far = (now + 10 * VALID_S).to_string();
        let forged = links
            .mac(&id, far.parse().unwrap())
            .map(|m| hex(&m.finalize().into_bytes()))
            .unwrap();
        assert!(!links.check_at(&id, &far, &forged, now));
    }
}
