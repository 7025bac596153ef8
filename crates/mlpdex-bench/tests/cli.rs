//! The `mlpdex-bench` binary end to end on tiny datasets: the parent/child protocol, the table,
//! the JSON output, and clear errors for bad input.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mlpdex-bench"))
}

#[test]
fn run_prints_a_table_and_writes_json_for_every_index() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bench()
        .args([
            "run",
            "--keys",
            "3000",
            "--ops",
            "2000",
            "--repeat",
            "2",
            "--no-probe",
        ])
        .args([
            "--index",
            "btreemap,congee,sorted-vec,hashmap",
            "--workload",
            "load,c,e",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("median of 2 round(s)"), "{stdout}");
    for index in ["btreemap", "congee", "sorted-vec", "hashmap"] {
        assert!(stdout.contains(index), "{index} missing from\n{stdout}");
    }
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rows = |index: &str, workload: &str| {
        records
            .iter()
            .filter(|r| r["index"] == index && r["workload"] == workload)
            .count()
    };
    // One row per (index, workload, mode): medians of the rounds, not every round.
    assert_eq!(rows("btreemap", "load"), 1);
    assert_eq!(rows("btreemap", "c"), 2);
    assert_eq!(rows("btreemap", "e"), 2);
    assert_eq!(rows("congee", "e"), 2);
    assert_eq!(rows("sorted-vec", "e"), 0, "static index serves no inserts");
    assert_eq!(rows("hashmap", "e"), 0, "hash map serves no scans");
    for r in &records {
        assert_eq!(r["kind"], "index", "{r}");
        assert_eq!(r["keys"], 3000);
        assert_eq!(r["spread"]["rounds"], 2, "the spread of both rounds: {r}");
        // Provenance: the code, the machine, the settings and the command behind the number.
        let p = &r["provenance"];
        assert!(p["commit"].as_str().unwrap().len() >= 7, "{p}");
        assert!(p["date"].as_str().unwrap().ends_with('Z'), "{p}");
        assert!(p["cores"].as_u64().unwrap() >= 1, "{p}");
        assert!(!p["cpu"].as_str().unwrap().is_empty(), "{p}");
        assert!(p["huge_pages"].as_str().unwrap().contains("thp:"), "{p}");
        assert_eq!(
            (p["seed"].as_u64(), p["rounds"].as_u64()),
            (Some(42), Some(2))
        );
        assert!(p["round"].as_u64().unwrap() < 2, "{p}");
        assert_eq!(p["keys"], 3000);
        assert!(
            p["command"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a == "--json"),
            "{p}"
        );
        assert!(
            r["dram_rt_per_op"].is_null(),
            "--no-probe gives no round trips"
        );
        assert!(r["mops"].as_f64().unwrap() > 0.0);
        let (p50, p99) = (r["p50_ns"].as_f64(), r["p99_ns"].as_f64());
        if r["workload"] != "load" {
            assert!(
                p50.unwrap() <= p99.unwrap(),
                "percentiles of sampled operations: {r}"
            );
        }
    }
}

#[test]
fn integer_only_index_is_skipped_on_string_keys() {
    let out = bench()
        .args([
            "run",
            "--keys",
            "2000",
            "--ops",
            "1000",
            "--repeat",
            "1",
            "--no-probe",
        ])
        .args([
            "--index",
            "congee,btreemap",
            "--workload",
            "c",
            "--dataset",
            "email",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("congee: skipped") && stderr.contains("8-byte keys"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("btreemap"));
}

#[test]
fn a_run_that_measures_nothing_fails_and_says_why() {
    let out = bench()
        .args(["run", "--keys", "2000", "--ops", "1000", "--repeat", "2"])
        .args(["--no-probe", "--index", "mlp-index", "--dataset", "email"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "an empty table must not exit 0: {stderr}"
    );
    assert!(
        stderr.contains("nothing was measured") && stderr.contains("8-byte keys"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the indexes that take variable-length keys: btreemap, skipmap"),
        "names the indexes that can: {stderr}"
    );
    assert!(
        !stderr.contains("keys: btreemap, skipmap, congee"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("round 2/2"),
        "no second round once every index is known to be skipped: {stderr}"
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.sosd");
    std::fs::write(&bad, [5u8, 0, 0]).unwrap();
    for (args, needle) in [
        (vec!["--index", "nope"], "unknown index"),
        (
            vec!["--index", "btreemap,cukoo-trie"],
            r#"unknown index "cukoo-trie"; did you mean "cuckoo-trie"?"#,
        ),
        (
            vec!["--workload", "lookup-mis"],
            r#"did you mean "lookup-miss"?"#,
        ),
        (vec!["--workload", "zz"], "zz"),
        (vec!["--keys", "ten"], "not a count"),
        (vec!["--dataset", "no-such-set"], "no-such-set"),
    ] {
        let out = bench()
            .args(["run", "--no-probe"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    let spec = format!("u64:{}", bad.display());
    let out = bench()
        .args([
            "run",
            "--no-probe",
            "--keys",
            "10",
            "--index",
            "btreemap",
            "--dataset",
            &spec,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("btreemap: skipped"), "{stderr}");
    assert!(
        stderr.contains("bad.sosd"),
        "the error names the file: {stderr}"
    );
}

#[test]
fn filter_prints_a_table_writes_json_and_reports_fpr_charts() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("filters.json");
    let out = bench()
        .args(["filter", "--keys", "3000", "--ops", "2000", "--repeat", "1"])
        .args([
            "--index",
            "surf-base,surf-real-4,bloom",
            "--dataset",
            "email",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FPR %") && stdout.contains("surf-real-4"),
        "{stdout}"
    );
    for kind in ["range", "mixed"] {
        assert!(
            stdout.contains(&format!(
                "bloom: {kind} queries skipped: a Bloom filter answers point queries only"
            )),
            "{stdout}"
        );
    }
    assert!(
        stdout.contains("the size of surf-real-4 before it"),
        "{stdout}"
    );
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // 3 builds, 3 point rows, 2 range and 2 mixed rows (the Bloom filter answers points only).
    assert_eq!(records.len(), 10);
    for r in &records {
        assert_eq!(r["kind"], "filter", "{r}");
        assert!(
            r["provenance"]["commit"].is_string(),
            "filter records carry provenance too"
        );
        assert_eq!(r["keys"], 1500);
        assert!(r["bits_per_key"].as_f64().unwrap() > 0.0);
        assert!(r["filter"]["family"].is_string(), "typed, not a name: {r}");
        assert_eq!(r["fpr"].is_null(), r["op"] == "build", "{r}");
    }
    let charts = dir.path().join("charts");
    let out = bench()
        .args(["report", "--json"])
        .arg(&json)
        .arg("--out")
        .arg(&charts)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for kind in ["point", "range", "mixed"] {
        assert!(charts.join(format!("fpr-email-1500-{kind}.svg")).exists());
    }

    for (args, needle) in [
        (vec!["--index", "surf-hash-0"], "out of range"),
        (vec!["--index", "surf-trie"], "unknown filter"),
        (vec!["--query", "count"], "unknown query kind"),
    ] {
        let out = bench()
            .args(["filter", "--keys", "100", "--ops", "10"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

#[test]
fn encoded_indexes_and_the_hope_sweep_report_hope_fields() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let out = bench()
        .args(["run", "--keys", "3000", "--ops", "2000", "--repeat", "1"])
        .args(["--no-probe", "--dataset", "email", "--workload", "load,c,e"])
        .args([
            "--index",
            "fst,cuckoo-trie",
            "--encoder",
            "none,double-char",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The children's notes (here the encoder's figures) go to stderr.
    assert!(stderr.contains("HOPE double-char"), "{stderr}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for index in [
        "fst",
        "fst+double-char",
        "cuckoo-trie",
        "cuckoo-trie+double-char",
    ] {
        let mine: Vec<_> = records.iter().filter(|r| r["index"] == index).collect();
        assert!(!mine.is_empty(), "{index} has no records");
        for r in mine {
            let encoded = index.contains('+');
            let hope = &r["hope"];
            assert_eq!(hope["compression_rate"].is_number(), encoded, "{r}");
            assert_eq!(hope["dictionary_bytes"].is_number(), encoded, "{r}");
            if encoded {
                assert!(hope["compression_rate"].as_f64().unwrap() > 1.0, "{r}");
                assert!(hope["encode_ns_per_byte"].as_f64().unwrap() > 0.0, "{r}");
            }
        }
    }

    let sweep = dir.path().join("hope.json");
    let out = bench()
        .args([
            "hope",
            "--dataset",
            "email",
            "--keys",
            "3000",
            "--repeat",
            "1",
        ])
        .args([
            "--scheme",
            "single-char,3-grams,alm-improved",
            "--limit",
            "300,1k",
        ])
        .arg("--json")
        .arg(&sweep)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&sweep)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Single-Char once (fixed size), the other two at both limits.
    assert_eq!(records.len(), 5);
    for r in &records {
        assert_eq!(r["kind"], "encoder", "{r}");
        assert!(r["hope"]["compression_rate"].as_f64().unwrap() > 1.0, "{r}");
        assert!(r["hope"]["dictionary_bytes"].as_u64().unwrap() > 0, "{r}");
    }
    let names: Vec<&str> = records
        .iter()
        .map(|r| r["index"].as_str().unwrap())
        .collect();
    for n in ["single-char", "3-grams-300", "alm-improved-1024"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }

    let out = bench()
        .args(["filter", "--keys", "3000", "--ops", "1000", "--repeat", "1"])
        .args(["--dataset", "email", "--query", "point,range"])
        .args(["--index", "surf-real-8,surf-real-8+double-char"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("surf-real-8+double-char"));
}

#[test]
fn a_suite_runs_its_experiments_and_writes_json_and_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let suites = dir.path().join("suites");
    std::fs::create_dir(&suites).unwrap();
    std::fs::write(
        suites.join("tiny.toml"),
        r#"
title = "Tiny suite"
[[experiment]]
indexes = ["btreemap", "fst"]
keys = 2000
ops = 1000
workloads = ["c"]
modes = ["independent"]
rounds = 1
[[experiment]]
indexes = "btreemap"
dataset = "email"
keys = 2000
ops = 1000
workloads = ["load", "lower-bound"]
modes = ["dependent"]
rounds = 2
[[experiment]]
kind = "filter"
indexes = ["surf-base", "bloom-8"]
keys = 2000
ops = 500
queries = ["point"]
rounds = 1
[[experiment]]
kind = "hope"
indexes = "double-char"
keys = 2000
rounds = 1
"#,
    )
    .unwrap();
    let out = dir.path().join("results");
    let run = |name: &str| {
        bench()
            .args(["suite", name, "--no-probe"])
            .arg("--dir")
            .arg(&suites)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap()
    };
    let o = run("tiny");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let json = std::fs::read_to_string(out.join("tiny.json")).unwrap();
    let records: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Experiment 1: 2 indexes x c; experiment 2: load and lower-bound; experiment 3: 2
    // builds and 2 point-query loops; experiment 4: one encoder.
    assert_eq!(records.len(), 9, "{json}");
    let kinds = |k: &str| records.iter().filter(|r| r["kind"] == k).count();
    assert_eq!(
        (kinds("index"), kinds("filter"), kinds("encoder")),
        (4, 4, 1)
    );
    assert!(
        records
            .iter()
            .any(|r| r["dataset"] == "email" && r["workload"] == "lower-bound")
    );
    assert!(
        records
            .iter()
            .all(|r| r["provenance"]["commit"].is_string())
    );
    let md = std::fs::read_to_string(out.join("tiny.md")).unwrap();
    assert!(md.starts_with("# Tiny suite"), "{md}");
    assert!(md.contains("`fst`") && md.contains("email"), "{md}");
    assert!(md.contains("FPR") && md.contains("HOPE encoders"), "{md}");
    assert!(
        md.contains("Measured at commit"),
        "provenance in the table's file: {md}"
    );
    // Running it again replaces the records rather than appending.
    assert!(run("tiny").status.success());
    let again = std::fs::read_to_string(out.join("tiny.json")).unwrap();
    assert_eq!(again.lines().count(), 9);
    // An unknown suite names the ones there are.
    let o = run("tinny");
    assert!(!o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("tiny"), "{stderr}");
}

#[test]
fn list_stats_measures_every_generated_dataset() {
    let out = bench()
        .args(["list", "--stats", "--keys", "2k", "--seed", "3"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    // A title, a header, then one row per generated dataset.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    for name in ["rand-8", "mono-8", "email", "paths", "urls", "composite"] {
        assert!(names.contains(&name), "{name} missing from\n{stdout}");
    }
    assert!(!names.iter().any(|n| n.contains(':')), "{stdout}");
    for row in &rows {
        // Name, keys, length, shared prefix, distinct prefixes at 7 depths.
        assert_eq!(row.len(), 11, "{stdout}");
        assert_eq!(row[1], "2000", "{stdout}");
    }
    let rand8 = rows.iter().find(|r| r[0] == "rand-8").unwrap();
    assert_eq!(rand8[2], "8.0", "{stdout}");
    assert_eq!(rand8[10], "2000", "{stdout}");
    assert!(
        stderr.contains("paths: generated 2000 + 1000 reserve keys"),
        "{stderr}"
    );

    // The statistics' options need --stats.
    let out = bench().args(["list", "--keys", "10"]).output().unwrap();
    assert!(!out.status.success());
}

#[test]
fn list_groups_main_indexes_apart_from_sweep_variants_with_aligned_columns() {
    let out = bench().arg("list").output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    // Sections: a title line ending in ':' and its two-space-indented rows.
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in stdout.lines() {
        match line.strip_prefix("  ") {
            Some(row) => sections
                .last_mut()
                .expect("a row before any title")
                .1
                .push(row),
            None => sections.push((line, Vec::new())),
        }
    }
    let section = |title: &str| -> &Vec<&str> {
        &sections
            .iter()
            .find(|(t, _)| *t == title)
            .unwrap_or_else(|| panic!("no section {title:?} in\n{stdout}"))
            .1
    };
    let names = |rows: &Vec<&str>| -> Vec<String> {
        rows.iter()
            .map(|r| r.split_whitespace().next().unwrap().to_owned())
            .collect()
    };
    let main = names(section("indexes:"));
    let variants = names(section("sweep variants:"));
    for index in ["btreemap", "fst", "cuckoo-trie", "mlp-index", "skiplist"] {
        assert!(
            main.iter().any(|n| n == index),
            "{index} not among {main:?}"
        );
    }
    assert!(
        !main.iter().any(|n| n.starts_with("cuckoo-trie-d")),
        "{main:?}"
    );
    // One line per family.
    assert!(
        variants
            .iter()
            .any(|n| n == "cuckoo-trie-d{1,2,3,4,5,6,8,10}"),
        "{variants:?}"
    );
    assert_eq!(
        variants
            .iter()
            .filter(|n| n.starts_with("skiplist-k"))
            .count(),
        1
    );
    // In every name/description section, the descriptions start at one column: two spaces past
    // the longest name.
    for title in [
        "indexes:",
        "sweep variants:",
        "datasets:",
        "workloads:",
        "filters (the filter subcommand):",
    ] {
        let rows = section(title);
        let longest = names(rows).iter().map(|n| n.chars().count()).max().unwrap();
        for row in rows {
            let name = row.split_whitespace().next().unwrap();
            let about_at = row.len() - row[name.len()..].trim_start().len();
            assert_eq!(about_at, longest + 2, "{title} {row:?}");
        }
    }
}
