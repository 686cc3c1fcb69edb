//! Arbitrary bytes as a transcript file: the index, caught up in two parts and read warm,
//! answers like the reference loader, in both views (`checks::index`).

#![no_main]

#[allow(dead_code, reason = "each target calls one of the checks")]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::index(data));
