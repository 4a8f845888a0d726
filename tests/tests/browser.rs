//! The example reports in a real browser: Debian's Chromium, headless, loads every committed HTML
//! page under `reports/`. A page fails if it writes anything to the console (an error, an
//! uncaught exception, a stray log), if its rendered DOM lacks the lanes, the lease bars or (for a
//! violating run) the violation marker, or if its screenshot is as empty as a blank page.
//!
//! `cargo xtask test` installs the browser (`apt-get install chromium`) when it is missing; a
//! plain `cargo test` without it fails here with the command that installs it, never passes.

use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> PathBuf {
    let path = std::env::var_os("LEASESIM_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "the browser test needs Chromium at {}: run `cargo xtask test` (it installs it), or `apt-get install chromium`, or set LEASESIM_CHROMIUM",
        path.display()
    );
    path
}

fn reports_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .join("reports")
}

/// Every HTML page under `reports/`.
fn pages() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![reports_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .expect("a readable folder")
            .flatten()
        {
            let path = entry.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "src") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "html") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Runs headless Chromium on a page; returns (DOM, console lines).
fn load(page: &Path, extra: &[String]) -> (String, Vec<String>) {
    let tmp = leasesim_tests::TempDir::new(&format!(
        "chromium-{}",
        page.file_stem().unwrap().to_string_lossy()
    ));
    let profile = tmp.join("profile");
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-extensions",
            "--enable-logging=stderr",
            "--log-level=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("Chromium runs");
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (String::from_utf8_lossy(&out.stdout).to_string(), console)
}

fn screenshot_size(page: &Path, name: &str) -> u64 {
    let tmp = leasesim_tests::TempDir::new(&format!("shot-{name}"));
    let shot = tmp.join("shot.png");
    let _ = load(
        page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,1000".into(),
        ],
    );
    std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0)
}

#[test]
fn a_page_that_throws_is_caught() {
    // The check must be able to fail: a page with an uncaught error and a console message.
    let tmp = leasesim_tests::TempDir::new("throws");
    let page = tmp.join("throws.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><p>x</p><script>console.log('noise');throw new Error('boom')</script></body></html>",
    )
    .unwrap();
    let (_, console) = load(&page, &["--dump-dom".into()]);
    assert!(console.iter().any(|l| l.contains("boom")), "{console:?}");
    assert!(console.iter().any(|l| l.contains("noise")), "{console:?}");
}

#[test]
fn every_example_page_renders_cleanly_with_its_marks() {
    let pages = pages();
    assert!(pages.len() >= 4, "example pages are missing: {pages:?}");
    for page in &pages {
        let (dom, console) = load(page, &["--dump-dom".into()]);
        assert!(
            console.is_empty(),
            "{}: console output {console:?}",
            page.display()
        );
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("matrix") {
            assert!(dom.contains("class=\"matrix\""), "{name}: no matrix table");
            // Every counterexample link leads to a page that exists.
            for href in dom
                .split("href=\"")
                .skip(1)
                .map(|s| s.split('"').next().unwrap())
            {
                if href.starts_with("counterexamples/") {
                    assert!(
                        page.parent().unwrap().join(href).exists(),
                        "{name}: dead link {href}"
                    );
                }
            }
            continue;
        }
        assert!(dom.contains("class=\"lane"), "{name}: no lanes");
        assert!(
            dom.contains("lease-coord"),
            "{name}: no coordinator lease bars"
        );
        assert!(dom.contains("lease-holder"), "{name}: no holder lease bars");
        let violating = !name.contains("reference");
        assert_eq!(
            dom.contains("violation"),
            violating,
            "{name}: the violation marker must show exactly on violating runs"
        );
    }
}

#[test]
fn example_timelines_are_not_blank() {
    let tmp = leasesim_tests::TempDir::new("blank");
    let blank = tmp.join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let empty = screenshot_size(&blank, "blank");
    assert!(empty > 0, "Chromium took no screenshot");
    for page in pages()
        .iter()
        .filter(|p| p.to_string_lossy().contains("w1-w2"))
    {
        if page.extension().is_some_and(|e| e == "html") {
            let size = screenshot_size(page, "page");
            assert!(
                size > 3 * empty,
                "{}: its screenshot ({size} bytes) is as empty as a blank page ({empty} bytes)",
                page.display()
            );
        }
    }
}
