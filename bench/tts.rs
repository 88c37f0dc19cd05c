//! Voice-out benchmark (issue 54). Prints numbers; asserts only that every
//! step answered.
//!
//!     cargo bench --bench tts
//!
//! Cases, all with espeak-ng as the engine (the Local CLI entry) and
//! opusenc as the Ogg/Opus encoder, a different sentence each time (no
//! cache hit): (1) the engine and the encoder run bare, per second of the
//! audio they make; (2) the same through the release gateway
//! (`tts.convert` for a voice note over the WebSocket): what the gateway
//! adds around them, in ms and per second of audio; (3) a cached request
//! (the same sentence again); (4) replies on a fake Telegram with
//! `tts.auto: "always"` against `"off"`: when the text reply lands (the
//! voice must not delay it) and how long after the text the voice note
//! follows. Knob: `FERROCLAW_BENCH_N` (20).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/support/mod.rs"]
#[allow(dead_code, unused_imports)]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::fake_telegram::FakeTelegram;
use support::{connect_params, Client};

const TOKEN: &str = "bench-token-0123456789";
const BOT: &str = "123456:bench-bot-token";

fn n() -> usize {
    std::env::var("FERROCLAW_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn line(label: &str, unit: &str, v: &mut [f64]) {
    let (p50, p99) = (pct(v, 0.5), pct(v, 0.99));
    println!("{label:<60} p50 {p50:>8.2} {unit}  p99 {p99:>8.2} {unit}");
}

/// A sentence of about 3 s of speech, different for each `i`.
fn sentence(i: usize) -> String {
    format!("Reply number {i}: the kitchen lights are on and the weather today is mild.")
}

fn espeak_args(text: &str, out: &Path) -> Vec<String> {
    let out = out.display().to_string();
    ["-v", "en-us", "-s", "130", "-w", &out, text]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// Seconds of audio in a 16-bit mono WAV (espeak-ng's: 22,050 Hz).
fn wav_seconds(wav: &[u8]) -> f64 {
    let rate = u32::from_le_bytes(wav[24..28].try_into().unwrap()) as f64;
    let data = wav.len().saturating_sub(44) as f64;
    data / (rate * 2.0)
}

fn run(cmd: &str, args: &[String]) {
    let ok = Command::new(cmd)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(ok.success(), "{cmd}");
}

/// The encoder the gateway uses (`tts/transcode.rs`): ffmpeg when it is
/// on PATH, else opusenc; the same arguments, `wav` -> `ogg`.
fn encoder(wav: &Path, ogg: &Path) -> (&'static str, Vec<String>) {
    let (wav, ogg) = (wav.display().to_string(), ogg.display().to_string());
    let ffmpeg = Command::new("ffmpeg")
        .arg("-version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let args: &[&str] = match ffmpeg {
        true => &[
            "-hide_banner",
            "-loglevel",
            "error",
            "-nostdin",
            "-i",
            &wav,
            "-vn",
            "-c:a",
            "libopus",
            "-b:a",
            "64k",
            "-ar",
            "48000",
            "-ac",
            "1",
            "-f",
            "ogg",
            &ogg,
        ],
        false => &["--quiet", "--bitrate", "64", "--downmix-mono", &wav, &ogg],
    };
    let name = if ffmpeg { "ffmpeg" } else { "opusenc" };
    (name, args.iter().map(|a| a.to_string()).collect())
}

/// (1): the engine and the encoder alone; returns the mean audio length
/// and the mean time both took (ms).
fn bare(dir: &Path) -> (f64, f64) {
    let (mut engine, mut encode, mut per_s, mut secs) = (vec![], vec![], vec![], vec![]);
    for i in 0..n() {
        let wav = dir.join(format!("b{i}.wav"));
        let t = Instant::now();
        run("espeak-ng", &espeak_args(&sentence(1000 + i), &wav));
        let e = t.elapsed().as_secs_f64() * 1e3;
        let ogg = dir.join(format!("b{i}.ogg"));
        let (name, args) = encoder(&wav, &ogg);
        if i == 0 {
            println!("encoder: {name} (as the gateway runs it)");
        }
        let t = Instant::now();
        run(name, &args);
        let o = t.elapsed().as_secs_f64() * 1e3;
        let s = wav_seconds(&std::fs::read(&wav).unwrap());
        engine.push(e);
        encode.push(o);
        per_s.push((e + o) / s);
        secs.push(s);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (s, both) = (mean(&secs), mean(&engine) + mean(&encode));
    println!("audio per sentence: {s:.2} s");
    line("bare: espeak-ng", "ms", &mut engine);
    line("bare: encoder", "ms", &mut encode);
    line(
        "bare: engine + encoder per second of audio",
        "ms",
        &mut per_s,
    );
    (s, both)
}

/// The release gateway on `dir` with `cfg` (its `ferroclaw.json`); its
/// address.
fn gateway(dir: &Path, cfg: &Value) -> (support::process::Gateway, String) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("ferroclaw.json"), cfg.to_string()).unwrap();
    let (gw, addr, _) = support::process::spawn_gateway(dir);
    (gw, addr)
}

fn engine() -> Value {
    json!({ "command": "espeak-ng", "args": ["-v", "en-us", "-s", "130", "-w", "{{OutputPath}}", "{{Text}}"], "outputFormat": "wav" })
}

/// (2) and (3): `tts.convert` through the gateway.
async fn through_gateway(dir: &Path, audio_s: f64, bare_ms: f64) {
    let cfg = json!({
        "gateway": { "auth": { "mode": "token", "token": TOKEN } },
        "tts": { "providers": { "tts-local-cli": engine() } },
    });
    let (_gw, addr) = gateway(dir, &cfg);
    let mut c = Client::connect(&format!("ws://{addr}/")).await;
    let scopes = ["operator.read", "operator.write"];
    let res = c
        .handshake(connect_params("cli", "cli", &scopes, Some(TOKEN)))
        .await;
    assert_eq!(res["ok"], true, "{res}");
    let (mut took, mut over, mut cached) = (vec![], vec![], vec![]);
    for i in 0..n() {
        let p = json!({ "text": sentence(i), "channel": "telegram" });
        let t = Instant::now();
        let r = c.call("tts.convert", p.clone()).await;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(r["payload"]["voiceCompatible"], true, "{r}");
        took.push(ms);
        over.push((ms - bare_ms) / audio_s);
        let t = Instant::now();
        let again = c.call("tts.convert", p).await;
        assert_eq!(again["payload"]["audioPath"], r["payload"]["audioPath"]);
        cached.push(t.elapsed().as_secs_f64() * 1e3);
    }
    line(
        "gateway: tts.convert, voice note (engine + encoder inside)",
        "ms",
        &mut took,
    );
    line(
        "gateway: added around them, per second of audio",
        "ms",
        &mut over,
    );
    line("gateway: the same request again (cache)", "ms", &mut cached);
}

/// (4): replies on a fake Telegram with Auto-TTS on and off.
async fn replies(dir: &Path) {
    for auto in ["off", "always"] {
        let fake = FakeTelegram::start(BOT);
        let cfg = json!({
            "gateway": { "auth": { "mode": "token", "token": TOKEN } },
            "channels": { "telegram": { "botToken": BOT, "apiBaseUrl": fake.base, "dmPolicy": "allowlist",
                "allowFrom": [42], "pollTimeoutSeconds": 1, "streamMode": "off", "typingMode": "never" } },
            "tts": { "auto": auto, "providers": { "tts-local-cli": engine() } },
        });
        let (_gw, _) = gateway(&dir.join(auto), &cfg);
        let (mut text, mut voice) = (vec![], vec![]);
        for i in 0..n() {
            let before = fake.sent_to(42).len();
            let t = Instant::now();
            fake.dm(42, i as i64 + 1, &sentence(i));
            assert!(
                fake.until(Duration::from_secs(60), |f| f.sent_to(42).len() > before)
                    .await
            );
            text.push(t.elapsed().as_secs_f64() * 1e3);
            if auto == "always" {
                let landed = Instant::now();
                assert!(
                    fake.until(Duration::from_secs(60), |f| f.calls("sendVoice").len() > i)
                        .await
                );
                voice.push(landed.elapsed().as_secs_f64() * 1e3);
                // The next message after the voice: one reply at a time.
                assert!(
                    fake.until(Duration::from_secs(60), |f| f.sent_to(42).len()
                        > before + 1)
                        .await
                );
            }
        }
        line(
            &format!("telegram: message -> text reply, tts.auto {auto}"),
            "ms",
            &mut text,
        );
        if auto == "always" {
            line(
                "telegram: text reply -> voice note after it",
                "ms",
                &mut voice,
            );
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    println!("tts benchmark: n = {} per case", n());
    let (audio_s, bare_ms) = bare(dir.path());
    actix::System::new().block_on(async {
        through_gateway(&dir.path().join("gw"), audio_s, bare_ms).await;
        replies(&dir.path().join("tg")).await;
    });
}
