//! `chainlog-gen OUT [--bytes N] [--seed N] [--everything]`: writes one generated session
//! (the same as `chainlog gen`, without the rest of the command).

use std::process::ExitCode;

const USAGE: &str = "usage: chainlog-gen OUT [--bytes N] [--seed N] [--everything]";

fn main() -> ExitCode {
    match run(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chainlog-gen: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let (mut out, mut bytes, mut seed, mut everything) = (None, 200_000, 1, false);
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            let v = args
                .next()
                .ok_or(format!("{name} needs a value\n{USAGE}"))?;
            v.parse().map_err(|_| format!("{name}: not a number: {v}"))
        };
        match a.as_str() {
            "--bytes" => bytes = number("--bytes")?,
            "--seed" => seed = number("--seed")?,
            "--everything" => everything = true,
            "-h" | "--help" => return Err(USAGE.into()),
            _ if out.is_none() && !a.starts_with('-') => out = Some(std::path::PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a}\n{USAGE}")),
        }
    }
    let out = out.ok_or(USAGE)?;
    let opts = if everything {
        chainlog_gen::GenOptions::everything(seed, bytes)
    } else {
        chainlog_gen::GenOptions::plain(seed, bytes)
    };
    let (len, expected) =
        chainlog_gen::write_file(&opts, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "wrote {} ({len} bytes, {} messages on the resume view)",
        out.display(),
        expected.resume_uuids.len()
    );
    Ok(())
}
