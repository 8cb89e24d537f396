//! `gmp bench allowed` runs and writes its results; allowing contacts only frees items.

use serde_json::Value;

#[test]
fn bench_allowed_writes_three_worlds_and_allowing_only_frees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gmp"))
        .args([
            "bench",
            "allowed",
            "--configs",
            "3000",
            "--motions",
            "300",
            "--repeats",
            "1",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .expect("gmp runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).expect("json on stdout");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .expect("results")
        .map(|e| e.expect("entry").file_name().into_string().expect("name"))
        .collect();
    assert_eq!(files.len(), 2, "{files:?}");
    let json = files
        .iter()
        .find(|f| f.ends_with(".json"))
        .expect("json file");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(json)).expect("read"))
            .expect("json");
    assert_eq!(written, printed);
    let rows = printed["rows"].as_array().expect("rows");
    let worlds: Vec<&str> = rows.iter().map(|r| r["world"].as_str().unwrap()).collect();
    assert_eq!(worlds, ["none", "link pair", "obstacle"]);
    let checkers: Vec<u64> = rows
        .iter()
        .map(|r| r["checkers"].as_u64().unwrap())
        .collect();
    assert_eq!(checkers, [1, 1, 2]);
    let free = |r: &Value, k: &str| r[k].as_f64().unwrap();
    for k in ["free_configs", "free_motions"] {
        // The same items in every world: allowing contacts frees some, never blocks any.
        assert!(free(&rows[1], k) >= free(&rows[0], k), "{k}");
        assert!(free(&rows[2], k) >= free(&rows[0], k), "{k}");
    }
    assert!(free(&rows[2], "free_configs") > free(&rows[0], "free_configs"));
    let md = files.iter().find(|f| f.ends_with(".md")).expect("md file");
    let text = std::fs::read_to_string(dir.path().join(md)).expect("read");
    assert!(text.contains("| cpu | obstacle | 2 |"), "{text}");
}
