//! Release metadata: every SDK and the CLI carry the workspace's version (the one place it is
//! set: `Cargo.toml`) wherever a package or a User-Agent states it, the same licence as the
//! licence file at the repository's root, and a changelog whose latest entry is that version.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// The quoted value after `marker` on the line that holds it (`version = "0.1.0"` → `0.1.0`).
fn quoted_after(text: &str, marker: &str, path: &str) -> String {
    let line = text
        .lines()
        .find(|line| line.trim_start().starts_with(marker))
        .unwrap_or_else(|| panic!("{path} has no line starting {marker:?}"));
    line.split('"')
        .nth(1)
        .unwrap_or_else(|| panic!("{path}: {line:?} quotes no value"))
        .to_owned()
}

#[test]
fn every_sdk_states_the_workspaces_version_and_licence() {
    let workspace = read("Cargo.toml");
    let version = quoted_after(&workspace, "version =", "Cargo.toml");
    let licence = quoted_after(&workspace, "license =", "Cargo.toml");
    assert_eq!(env!("CARGO_PKG_VERSION"), version);
    let package: serde_json::Value =
        serde_json::from_str(&read("sdk/typescript/package.json")).unwrap();
    let stated = [
        (
            "sdk/python/src/forgebench/_version.py",
            quoted_after(
                &read("sdk/python/src/forgebench/_version.py"),
                "__version__ =",
                "_version.py",
            ),
        ),
        (
            "sdk/typescript/package.json",
            package["version"].as_str().unwrap().to_owned(),
        ),
        (
            "sdk/typescript/src/transport.ts (User-Agent)",
            quoted_after(
                &read("sdk/typescript/src/transport.ts"),
                "export const SDK_VERSION =",
                "transport.ts",
            ),
        ),
    ];
    for (place, stated) in stated {
        assert_eq!(stated, version, "{place}");
    }
    let pyproject = read("sdk/python/pyproject.toml");
    assert!(
        pyproject.contains("dynamic = [\"version\"]"),
        "pyproject.toml reads its version from _version.py"
    );
    for crate_manifest in ["sdk/rust/Cargo.toml", "cli/Cargo.toml"] {
        let manifest = read(crate_manifest);
        assert!(
            manifest.contains("version.workspace = true"),
            "{crate_manifest}"
        );
        assert!(
            manifest.contains("license.workspace = true"),
            "{crate_manifest}"
        );
    }
    assert_eq!(package["license"], licence.as_str());
    assert_eq!(
        quoted_after(&pyproject, "license =", "pyproject.toml"),
        licence
    );
    assert_eq!(licence, "Apache-2.0");
    let licence_file = read("LICENSE");
    assert!(
        licence_file.contains("Apache License")
            && licence_file.contains("Version 2.0, January 2004"),
        "LICENSE is the Apache License 2.0"
    );
}

#[test]
fn every_sdk_has_a_changelog_whose_latest_entry_is_the_version() {
    let version = env!("CARGO_PKG_VERSION");
    for changelog in [
        "sdk/python/CHANGELOG.md",
        "sdk/typescript/CHANGELOG.md",
        "sdk/rust/CHANGELOG.md",
    ] {
        let text = read(changelog);
        let latest = text
            .lines()
            .find(|line| line.starts_with("## "))
            .unwrap_or_else(|| panic!("{changelog} has no entry"));
        assert!(
            latest.starts_with(&format!("## {version} ")) || latest == format!("## {version}"),
            "{changelog}'s latest entry is {latest:?}, not {version}"
        );
    }
}
