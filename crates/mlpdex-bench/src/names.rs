//! Names typed on the command line (indexes, datasets, workloads, filters): when one is unknown,
//! the error suggests the closest known name and points to `mlpdex-bench list`, instead of
//! dumping every name:
//!
//! ```text
//! unknown index "cukoo-trie"; did you mean "cuckoo-trie"? (mlpdex-bench list shows all)
//! ```
//!
//! Closeness is the Damerau–Levenshtein edit distance (insertions, deletions, substitutions
//! and transpositions of adjacent characters: the typos people make), ignoring ASCII case.
//!
//! Some names are patterns with upper-case placeholders (`scan-N`, `surf-mixed-H-R`,
//! `u64:PATH`). A typed name is compared with a pattern's fixed head (`scan`, `surf-mixed`,
//! `u64`) and the suggestion keeps what the user gave for the placeholders: `scna-100` suggests
//! `scan-100`, `line:/data/keys` suggests `lines:/data/keys`, and `surf-hash` alone suggests the
//! pattern, `surf-hash-N`.

/// The error message for the unknown `name` of a `what` (`index`, `dataset`, ...), with the
/// suggestion if there is one.
pub fn unknown(what: &str, name: &str, suggestion: Option<&str>) -> String {
    match suggestion {
        Some(s) => {
            format!("unknown {what} {name:?}; did you mean {s:?}? (mlpdex-bench list shows all)")
        }
        None => format!("unknown {what} {name:?} (mlpdex-bench list shows all)"),
    }
}

/// The known name closest to `name`, if one is close enough to be a likely typo; `known` may
/// hold patterns (see the module docs). Close enough means one of:
///
/// - at least 60% of the longer name's characters need no edit;
/// - a single edit, both names at least two characters long (`ax` for `az`);
/// - `name` is a start of the known name, three characters or more (`zipf` for `zipfian`).
///
/// Ties go to the name listed first. Never suggests `name` itself (but does suggest `btreemap`
/// for `BTreeMap`: names are case-sensitive).
pub fn suggest(name: &str, known: &[&str]) -> Option<String> {
    let mut best: Option<(f64, String)> = None;
    for &k in known {
        let scored = match Pattern::parse(k) {
            None => score(name, k).map(|s| (s, k.to_owned())),
            Some(p) => p.suggest(name),
        };
        if let Some((s, candidate)) = scored
            && candidate != name
            && best.as_ref().is_none_or(|(b, _)| s > *b)
        {
            best = Some((s, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// How alike `typed` and `known` are (1 = equal up to ASCII case), or `None` when they are not
/// close enough to suggest one for the other.
fn score(typed: &str, known: &str) -> Option<f64> {
    let (a, b) = (typed.to_ascii_lowercase(), known.to_ascii_lowercase());
    let similarity = strsim::normalized_damerau_levenshtein(&a, &b);
    let one_edit = strsim::damerau_levenshtein(&a, &b) == 1 && a.len().min(b.len()) >= 2;
    let abbreviation = a.len() >= 3 && b.starts_with(&a);
    (similarity >= 0.6 || one_edit || abbreviation).then_some(similarity)
}

/// A name with placeholders: a fixed head, a separator, and upper-case placeholder segments
/// (`surf-mixed` `-` `H-R`).
struct Pattern<'a> {
    /// The whole pattern, e.g. `surf-mixed-H-R`.
    text: &'a str,
    /// What precedes the placeholders, e.g. `surf-mixed`.
    head: &'a str,
    /// The character before the first placeholder, `-` or `:`.
    sep: char,
    /// Placeholder segments: after `:` one (a path takes any text), after `-` each `-`-separated
    /// segment.
    params: usize,
}

impl<'a> Pattern<'a> {
    /// The pattern `text` is, or `None` when it names one thing: a pattern has a segment after
    /// `-` or `:` in upper-case ASCII letters only.
    fn parse(text: &'a str) -> Option<Pattern<'a>> {
        text.char_indices()
            .filter(|&(_, c)| c == '-' || c == ':')
            .find_map(|(i, sep)| {
                let rest = &text[i + 1..];
                let first = rest.split(['-', ':']).next().unwrap_or("");
                (!first.is_empty() && first.bytes().all(|b| b.is_ascii_uppercase())).then(|| {
                    Pattern {
                        text,
                        head: &text[..i],
                        sep,
                        params: if sep == ':' {
                            1
                        } else {
                            rest.split('-').count()
                        },
                    }
                })
            })
    }

    /// The suggestion this pattern makes for `typed`, scored by how alike the heads are: the
    /// pattern with `typed`'s parameters when it has the right number of them, else the pattern
    /// itself.
    fn suggest(&self, typed: &str) -> Option<(f64, String)> {
        let (head, params) = match self.sep {
            ':' => match typed.split_once(':') {
                Some((h, p)) => (h, Some(p).filter(|p| !p.is_empty())),
                None => (typed, None),
            },
            _ => {
                let head = typed.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
                let params = typed[head.len()..].trim_start_matches('-');
                let fits = !params.is_empty()
                    && params.split('-').count() == self.params
                    && params.split('-').all(|p| !p.is_empty());
                (head, Some(params).filter(|_| fits))
            }
        };
        let s = score(head, self.head)?;
        let candidate = match params {
            Some(p) => format!("{}{}{p}", self.head, self.sep),
            None => self.text.to_owned(),
        };
        Some((s, candidate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: &[&str] = &[
        "load",
        "a",
        "b",
        "c",
        "lookup-miss",
        "lower-bound",
        "scan-N",
    ];

    #[test]
    fn typos_get_the_intended_name() {
        let indexes = [
            "btreemap",
            "cuckoo-trie",
            "cuckoo-trie-d4",
            "skiplist",
            "all",
        ];
        let s = |typed: &str| suggest(typed, &indexes);
        assert_eq!(s("cukoo-trie").as_deref(), Some("cuckoo-trie")); // deletion
        assert_eq!(s("cuckoo-tire").as_deref(), Some("cuckoo-trie")); // transposition
        assert_eq!(s("btreempa").as_deref(), Some("btreemap"));
        assert_eq!(s("BTreeMap").as_deref(), Some("btreemap")); // case
        assert_eq!(s("cuckoo-trie-4").as_deref(), Some("cuckoo-trie-d4"));
        assert_eq!(s("skip").as_deref(), Some("skiplist")); // abbreviation
        assert_eq!(s("al").as_deref(), Some("all"));
        assert_eq!(suggest("lookup-mis", WORDS).as_deref(), Some("lookup-miss"));
        assert_eq!(suggest("lowerbound", WORDS).as_deref(), Some("lower-bound"));
        assert_eq!(
            suggest("zipf", &["uniform", "zipfian"]).as_deref(),
            Some("zipfian")
        );
        assert_eq!(suggest("ax", &["az", "email"]).as_deref(), Some("az"));
    }

    #[test]
    fn far_off_words_get_none() {
        let indexes = ["btreemap", "cuckoo-trie", "skiplist", "fst", "all"];
        for typed in ["banana", "nope", "zz", "x", "", "congestion-window"] {
            assert_eq!(suggest(typed, &indexes), None, "{typed}");
        }
        // One-letter names are too short to guess at.
        assert_eq!(suggest("g", WORDS), None);
        assert_eq!(suggest("zz", WORDS), None);
        // Nothing known, nothing suggested.
        assert_eq!(suggest("fst", &[]), None);
    }

    #[test]
    fn patterns_keep_the_parameters_typed() {
        let filters = [
            "surf-base",
            "surf-hash-N",
            "surf-real-N",
            "surf-mixed-H-R",
            "bloom-B",
            "bloom",
        ];
        let s = |typed: &str| suggest(typed, &filters);
        assert_eq!(s("surf-hsh-8").as_deref(), Some("surf-hash-8"));
        assert_eq!(s("surf-mxied-4-4").as_deref(), Some("surf-mixed-4-4"));
        assert_eq!(s("blom-10").as_deref(), Some("bloom-10"));
        assert_eq!(s("surf-bse").as_deref(), Some("surf-base"));
        // Without parameters, or with the wrong number of them, the pattern itself.
        assert_eq!(s("surf-hash").as_deref(), Some("surf-hash-N"));
        assert_eq!(s("surf-mixd-4").as_deref(), Some("surf-mixed-H-R"));
        assert_eq!(s("cuckoo"), None);
        assert_eq!(suggest("scna-100", WORDS).as_deref(), Some("scan-100"));
        assert_eq!(suggest("scan100", WORDS).as_deref(), Some("scan-100"));
        assert_eq!(suggest("scan", WORDS).as_deref(), Some("scan-N"));
        let datasets = ["rand-8", "rand-16", "email", "u64:PATH", "lines:PATH"];
        let s = |typed: &str| suggest(typed, &datasets);
        assert_eq!(
            s("line:/data/keys.txt").as_deref(),
            Some("lines:/data/keys.txt")
        );
        assert_eq!(s("u46:/data/osm").as_deref(), Some("u64:/data/osm"));
        assert_eq!(s("lines").as_deref(), Some("lines:PATH"));
        assert_eq!(s("rand-9").as_deref(), Some("rand-8"));
        assert_eq!(s("rand16").as_deref(), Some("rand-16"));
        assert_eq!(s("emial").as_deref(), Some("email"));
        assert_eq!(s("osm:/data/osm"), None);
    }

    #[test]
    fn patterns_parse() {
        let p = Pattern::parse("surf-mixed-H-R").unwrap();
        assert_eq!((p.head, p.sep, p.params), ("surf-mixed", '-', 2));
        let p = Pattern::parse("u64:PATH").unwrap();
        assert_eq!((p.head, p.sep, p.params), ("u64", ':', 1));
        for name in ["lookup-miss", "rand-8", "dec-a", "bloom", "3-grams"] {
            assert!(Pattern::parse(name).is_none(), "{name}");
        }
    }

    #[test]
    fn messages_point_to_list() {
        assert_eq!(
            unknown("index", "cukoo-trie", Some("cuckoo-trie")),
            "unknown index \"cukoo-trie\"; did you mean \"cuckoo-trie\"? \
             (mlpdex-bench list shows all)"
        );
        assert_eq!(
            unknown("dataset", "banana", None),
            "unknown dataset \"banana\" (mlpdex-bench list shows all)"
        );
    }
}
