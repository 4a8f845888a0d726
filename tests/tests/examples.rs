//! The example reports committed under `reports/` are what `leasesim examples --page-limit 300`
//! writes today: a change in behaviour or in the renderers that is not regenerated fails here.
//! Regenerate with `cargo run --release -- examples --out reports --page-limit 300`. The pages
//! kept stay small: each under 300 KB, all of them (the SQL matrix's too) under 2 MB.

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
    let limit = leasesim::examples::COMMITTED_PAGE_LIMIT_KB * 1_000;
    leasesim::examples::write_examples(&fresh, 2, Some(limit)).expect("examples are written");
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
                "reports/{} is missing: run cargo run --release -- examples --out reports --page-limit 300",
                rel.display()
            )
        });
        assert!(
            want == have,
            "reports/{} is stale: run cargo run --release -- examples --out reports --page-limit 300",
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

/// What the repository keeps of its generated pages: each HTML page at most 300 KB, all of them
/// at most 2 MB.
#[test]
fn the_committed_pages_stay_small() {
    let reports = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("reports");
    let limit = leasesim::examples::COMMITTED_PAGE_LIMIT_KB * 1_000;
    let mut total = 0;
    let mut pages = 0;
    for rel in files(&reports) {
        if rel.extension().is_none_or(|e| e != "html") {
            continue;
        }
        let len = std::fs::metadata(reports.join(&rel)).unwrap().len();
        assert!(
            len <= limit,
            "reports/{} is {len} bytes, over the {limit} a committed page may take: leave it out (--page-limit 300)",
            rel.display()
        );
        total += len;
        pages += 1;
    }
    assert!(pages >= 10, "{pages} pages");
    assert!(
        total <= 2_000_000,
        "the committed pages take {total} bytes, over 2 MB"
    );
}

/// A counterexample whose timeline is over the limit is left out, and the matrix links its
/// replay instead, which exists.
#[test]
fn a_page_over_the_limit_is_left_out_and_the_matrix_links_its_replay() {
    let tmp = leasesim_tests::TempDir::new("examples-limit");
    let dir = tmp.0.clone();
    // Every counterexample's timeline is over 1 byte.
    leasesim::examples::write_examples(&dir, 2, Some(1)).expect("examples are written");
    let written = files(&dir);
    assert!(
        !written
            .iter()
            .any(|p| p.starts_with("counterexamples") && p.extension().is_some_and(|e| e == "html")),
        "{written:?}"
    );
    let matrix = std::fs::read_to_string(dir.join("matrix.html")).unwrap();
    assert!(!matrix.contains("counterexamples/unconditional-commit.html"));
    assert!(matrix.contains("href=\"counterexamples/unconditional-commit.json\""));
    assert!(dir
        .join("counterexamples/unconditional-commit.json")
        .exists());
}
