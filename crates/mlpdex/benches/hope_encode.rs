//! HOPE encoding (`Encoder::encode_into`), every scheme with its default dictionary limit, on
//! two key sets:
//!
//! - `email`: host-reversed e-mail addresses (`com.gmail@john.smith82`, the shape of
//!   mlpdex-bench's `email` data set), about 22 bytes of skewed text: what HOPE is for;
//! - `rand8`: random 8-byte keys, with nothing to compress: the cost of encoding alone.
//!
//! Each dictionary is built from a sample of 10,000 keys; the encoded keys are 4,096 others from
//! the same generator, one per iteration, into a reused buffer. The throughput column is in
//! bytes of original key per second.
//!
//! `cargo bench -p mlpdex --bench hope_encode`

use divan::Bencher;
use divan::counter::BytesCount;
use mlpdex::hope::{Encoder, Scheme};
use mlpdex::testing::TestRng;

fn main() {
    divan::main();
}

/// Keys encoded per sample (`--sample-size` overrides it): fixed rather than tuned by divan,
/// whose tuning from the first, cold sample sometimes picked one key per sample.
const SAMPLE_SIZE: u32 = 256;

/// Keys in the sample each dictionary is built from.
const SAMPLE: usize = 10_000;

/// Keys encoded, cycled through (a power of two).
const KEYS: usize = 4096;

const FIRST: &[&str] = &[
    "james",
    "mary",
    "john",
    "patricia",
    "robert",
    "jennifer",
    "michael",
    "linda",
    "david",
    "elizabeth",
    "william",
    "susan",
    "wei",
    "fatima",
    "carlos",
    "anna",
    "li",
    "olga",
    "ahmed",
    "yuki",
    "maria",
    "jose",
    "emma",
    "noah",
    "sofia",
    "lucas",
    "mia",
    "omar",
    "priya",
    "ivan",
];
const LAST: &[&str] = &[
    "smith",
    "johnson",
    "williams",
    "brown",
    "jones",
    "garcia",
    "miller",
    "davis",
    "rodriguez",
    "martinez",
    "wang",
    "zhang",
    "kumar",
    "nguyen",
    "kim",
    "mueller",
    "rossi",
    "silva",
    "tanaka",
    "ivanov",
    "cohen",
    "hansen",
    "murphy",
    "lopez",
    "novak",
    "singh",
    "ali",
    "chen",
    "lee",
];
/// Reversed hosts, the popular ones listed several times (drawn more often).
const HOSTS: &[&str] = &[
    "com.gmail",
    "com.gmail",
    "com.gmail",
    "com.gmail",
    "com.yahoo",
    "com.yahoo",
    "com.hotmail",
    "com.hotmail",
    "com.outlook",
    "com.aol",
    "com.icloud",
    "de.web",
    "de.gmx",
    "fr.orange",
    "ru.mail",
    "ru.yandex",
    "jp.co.yahoo",
    "edu.cmu.cs",
    "edu.mit",
    "org.example",
    "net.comcast",
    "uk.co.btinternet",
];

/// One host-reversed address: host, `@`, then a local part of first and last name with a
/// separator and sometimes digits.
fn email(rng: &mut TestRng) -> Vec<u8> {
    let mut k = rng.pick(HOSTS).as_bytes().to_vec();
    k.push(b'@');
    k.extend_from_slice(rng.pick(FIRST).as_bytes());
    k.extend_from_slice(rng.pick(&[".", "", "_"]).as_bytes());
    k.extend_from_slice(rng.pick(LAST).as_bytes());
    if rng.chance(0.4) {
        k.extend_from_slice(rng.below(100).to_string().as_bytes());
    }
    k
}

fn rand8(rng: &mut TestRng) -> Vec<u8> {
    rng.next_u64().to_be_bytes().to_vec()
}

/// `n` keys of `make` under `seed`.
fn keys(make: fn(&mut TestRng) -> Vec<u8>, seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = TestRng::new(seed);
    (0..n).map(|_| make(&mut rng)).collect()
}

/// Benchmarks encoding the keys of `make` with the dictionary of `scheme`.
fn bench(bencher: Bencher, scheme: Scheme, make: fn(&mut TestRng) -> Vec<u8>) {
    let encoder =
        Encoder::build(scheme, keys(make, 1, SAMPLE)).expect("the default limit is valid");
    let probe = keys(make, 2, KEYS);
    // One pass before timing: the dictionary's first touches stay out of the samples.
    let mut buf = Vec::with_capacity(256);
    for k in &probe {
        buf.clear();
        encoder.encode_into(k, &mut buf);
    }
    let mut next = 0usize;
    bencher
        .with_inputs(|| {
            next = (next + 1) & (KEYS - 1);
            probe[next].as_slice()
        })
        .input_counter(|k: &&[u8]| BytesCount::of_slice(*k))
        .bench_local_values(|k| {
            buf.clear();
            encoder.encode_into(k, &mut buf)
        });
}

#[divan::bench(args = Scheme::ALL, sample_size = SAMPLE_SIZE)]
fn email_keys(bencher: Bencher, scheme: Scheme) {
    bench(bencher, scheme, email);
}

#[divan::bench(args = Scheme::ALL, sample_size = SAMPLE_SIZE)]
fn rand8_keys(bencher: Bencher, scheme: Scheme) {
    bench(bencher, scheme, rand8);
}
