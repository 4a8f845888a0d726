//! The example reports committed under `reports/` are what `leasesim examples` writes today: a
//! change in behaviour or in the renderers that is not regenerated fails here. Regenerate with
//! `cargo run --release -- examples`.

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("a folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn committed_example_reports_are_up_to_date() {
    let tmp = leasesim_tests::TempDir::new("examples");
    let fresh = tmp.0.clone();
    leasesim::examples::write_examples(&fresh, 2).expect("examples are written");
    let committed = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("reports");
    let generated = files(&fresh);
    assert!(generated.len() >= 20, "{generated:?}");
    for rel in &generated {
        let want = std::fs::read(fresh.join(rel)).unwrap();
        let have = std::fs::read(committed.join(rel)).unwrap_or_else(|_| {
            panic!(
                "reports/{} is missing: run cargo run --release -- examples",
                rel.display()
            )
        });
        assert!(
            want == have,
            "reports/{} is stale: run cargo run --release -- examples",
            rel.display()
        );
    }
    // Nothing stale is left behind either (the crate's own files aside).
    for rel in files(&committed) {
        let name = rel.to_string_lossy();
        if name == "Cargo.toml" || name.starts_with("src") {
            continue;
        }
        // The SQL matrix needs a database and minutes; `tests/tests/sql.rs` checks that it
        // names the shipped files as they are.
        if name.starts_with("sql/") {
            continue;
        }
        assert!(
            generated.contains(&rel),
            "reports/{name} is no longer generated: remove it"
        );
    }
}
