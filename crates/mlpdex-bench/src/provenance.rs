//! Where a measurement comes from: the code, the machine, the settings and the command, stamped
//! on every record so a number found in a file months later can be traced and reproduced.

use serde::{Deserialize, Serialize};

/// The origin of one measurement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// Git commit the harness was built from (`unknown` outside a checkout).
    pub commit: String,
    /// Whether tracked files differed from that commit at build time (`None`: unknown).
    pub dirty: Option<bool>,
    /// When the measurement was taken, UTC, RFC 3339 (`2026-11-23T15:04:05Z`).
    pub date: String,
    /// Host name.
    pub host: String,
    /// CPU model, as `/proc/cpuinfo` names it.
    pub cpu: String,
    /// CPUs available to the process.
    pub cores: u32,
    /// Huge-page state: jemalloc's `thp` setting and whether mlpdex's own regions ask for huge
    /// pages.
    pub huge_pages: String,
    /// Seed of the dataset and the operations.
    pub seed: u64,
    /// The round (0-based) this record was measured in; for a reported median, the median
    /// round.
    pub round: Option<u32>,
    /// Rounds of the experiment.
    pub rounds: u32,
    /// Keys the dataset was asked for (the record's `keys` is what was loaded).
    pub keys: u64,
    /// The command line, program name included.
    pub command: Vec<String>,
    /// The DRAM latency figure's value and source, when it was probed.
    pub dram: Option<String>,
    /// The experiment of a suite the record belongs to (1-based), when a suite measured it:
    /// records of different experiments are different measurements even where they name the
    /// same index (a reference measured in each of two experiments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<u32>,
}

impl Provenance {
    /// The provenance of a measurement taken now, in this process, by this build.
    pub fn now(seed: u64, rounds: usize, keys: usize) -> Provenance {
        let dirty = match env!("MLPDEX_BENCH_DIRTY") {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        };
        Provenance {
            commit: env!("MLPDEX_BENCH_COMMIT").to_string(),
            dirty,
            date: rfc3339_utc(std::time::SystemTime::now()),
            host: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
            cpu: cpu_model().unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get() as u32),
            huge_pages: format!(
                "jemalloc thp:{}; mlpdex regions {}",
                crate::alloc::thp_mode(),
                if mlpdex::HugePages::Auto.requested() {
                    "huge"
                } else {
                    "4 KiB"
                }
            ),
            seed,
            round: None,
            rounds: rounds as u32,
            keys: keys as u64,
            command: std::env::args().collect(),
            dram: None,
            experiment: None,
        }
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The `model name` of the first CPU in `/proc/cpuinfo`.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, name)| name.trim().to_string())
}

/// `t` as an RFC 3339 UTC timestamp with whole seconds.
pub fn rfc3339_utc(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn timestamps_are_rfc3339_utc() {
        let at = |s: u64| rfc3339_utc(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_446_245), "2026-11-23T15:04:05Z");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59Z");
    }

    #[test]
    fn provenance_names_the_build_the_machine_and_the_command() {
        let p = Provenance::now(42, 3, 1000);
        assert!(
            p.commit.len() == 40 || p.commit == "unknown",
            "{:?}",
            p.commit
        );
        assert!(p.date.ends_with('Z') && p.date.len() == 20, "{}", p.date);
        assert!(p.cores >= 1);
        assert!(p.huge_pages.contains("thp:"), "{}", p.huge_pages);
        assert_eq!((p.seed, p.rounds, p.keys, p.round), (42, 3, 1000, None));
        assert!(!p.command.is_empty());
        let line = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Provenance>(&line).unwrap(), p);
    }
}
