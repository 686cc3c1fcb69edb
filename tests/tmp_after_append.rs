use std::io::Write;
use chainlog::{ResumeOptions, Store};
#[test]
fn tmp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("projects/-b/s.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut opts = chainlog_gen::GenOptions::everything(11, 10 << 20);
    opts.corruption = chainlog_gen::Corruption::default();
    opts.compact_every_bytes = Some(2 << 20);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    chainlog_gen::generate_to(&opts, &mut f).unwrap();
    f.flush().unwrap(); drop(f);
    let store = Store::new(dir.path().join("idx"));
    store.conversation(&path, &ResumeOptions::default()).unwrap();
    let p = store.pending(&path, &ResumeOptions::default()).unwrap();
    let mut parent = p.answer().names.name(p.answer().resolution.leaf.unwrap().0);
    let t0 = std::time::Instant::now();
    let (mut tp, mut tl, mut ta) = (std::time::Duration::ZERO, std::time::Duration::ZERO, std::time::Duration::ZERO);
    for n in 0..200u64 {
        let t = std::time::Instant::now();
        let uuid = format!("00000000-0000-4000-8000-{n:012x}");
        let ty = if n % 2 == 0 { "user" } else { "assistant" };
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let text = "x".repeat(900);
        writeln!(f, r#"{{"parentUuid":"{parent}","type":"{ty}","message":{{"role":"{ty}","content":"{text}"}},"uuid":"{uuid}","sessionId":"s","timestamp":"2031-01-01T00:{:02}:{:02}.000Z"}}"#, n/60, n%60).unwrap();
        drop(f);
        parent = uuid;
        ta += t.elapsed();
        let t = std::time::Instant::now();
        let p = store.pending(&path, &ResumeOptions::default()).unwrap();
        tp += t.elapsed();
        assert!(p.answer().materialised());
        let t = std::time::Instant::now();
        let _n = p.lines().unwrap().count();
        tl += t.elapsed();
    }
    eprintln!("total {:?} append {:?} pending {:?} lines {:?}", t0.elapsed() / 200, ta / 200, tp / 200, tl / 200);
}
