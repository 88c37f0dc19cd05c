//! Link flags for the `ferroclaw` binary. Relative relocations packed
//! (`DT_RELR`): the position-independent binary's ~95,000 pointer fix-ups
//! stored as a bitmap of a few KB instead of 2.3 MB of `.rela.dyn`, which
//! the loader read through at every start (BENCHMARKS.md, "Footprint").
//! Only where the C library's loader applies them (glibc 2.36 and later);
//! elsewhere the binary is linked as before.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    let linux_gnu = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_gnu && native && glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The build machine's glibc (`getconf GNU_LIBC_VERSION`: "glibc 2.36").
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let got = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    got >= (major, minor)
}
