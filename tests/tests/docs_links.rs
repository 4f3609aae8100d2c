//! Every relative link in README.md and docs/ resolves: the file exists, and an anchor names a
//! heading of it (GitHub's slugs: lower case, spaces to hyphens, punctuation dropped).

use std::path::Path;

use idgen_tests::workspace_root;

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `(target)` of each `[text](target)` that is not a web address.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = &rest[..end];
        if !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = workspace_root();
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        let dir = page.parent().unwrap_or(Path::new("."));
        for link in relative_links(&text) {
            checked += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                dir.join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link} (no such file)", page.display()));
                continue;
            }
            if !anchor.is_empty() {
                let heads = anchors(&std::fs::read_to_string(&target).unwrap_or_default());
                if !heads.iter().any(|h| h == anchor) {
                    broken.push(format!("{}: {link} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_stays_short() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail to docs/"
    );
}

/// The files and directories a page names in backticks (`store/marker.rs`, `ffi/`,
/// `workerid.rs::open`): each must be in the checkout, under the path given from the root or
/// as the end of a path in it. Placeholders (`<group>`) and lone words are not paths.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(|word| word.split("::").next().unwrap_or(word).to_string())
        .filter(|word| {
            !word.contains(['<', ' ', '*', '{', '$'])
                && (word.contains('/') || word.ends_with(".rs") || word.ends_with(".md"))
                && word != "/"
                && !word.starts_with("http")
        })
        .collect()
}

/// Every file and directory of the checkout, as paths from its root ("a/b.rs", "a/b/").
fn checkout_paths(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if [".git", "target"].iter().any(|skip| name == *skip) {
                continue;
            }
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            if path.is_dir() {
                out.push(format!("{relative}/"));
                dirs.push(path);
            } else {
                out.push(relative);
            }
        }
    }
    out
}

#[test]
fn every_path_the_architecture_names_is_in_the_checkout() {
    let root = workspace_root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let paths = checkout_paths(root);
    let named = named_paths(&text);
    assert!(named.len() > 40, "only {} paths found", named.len());
    let missing: Vec<_> = named
        .iter()
        .filter(|word| {
            let word = word.trim_start_matches("./");
            let dir = word.ends_with('/');
            !paths.iter().any(|p| {
                (p == word || p.ends_with(&format!("/{word}")))
                    || (!dir && (p == &format!("{word}/") || p.ends_with(&format!("/{word}/"))))
            })
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that are not in the checkout: {missing:?}"
    );
}
