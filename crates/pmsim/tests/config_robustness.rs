//! Config parsing never panics: mutated presets and random overrides give either a valid
//! config or one clear line.

use pmsim::config::{SimConfig, TraceClock, PRESETS};

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[test]
fn mutated_presets_parse_or_fail_with_one_line() {
    let mut x = 0x5eed_1234_abcd_0001u64;
    let alphabet = b"0123456789-.=[]\"# \nabcdefghijklmnopqrstuvwxyz_";
    let mut ok = 0;
    for i in 0..4000 {
        let (_, text) = PRESETS[i % PRESETS.len()];
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..(1 + xorshift(&mut x) % 4) {
            let pos = (xorshift(&mut x) as usize) % bytes.len();
            match xorshift(&mut x) % 3 {
                0 => {
                    bytes.remove(pos);
                }
                1 => bytes.insert(pos, alphabet[(xorshift(&mut x) as usize) % alphabet.len()]),
                _ => bytes[pos] = alphabet[(xorshift(&mut x) as usize) % alphabet.len()],
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match SimConfig::from_toml_str(&text, "fuzz.toml") {
            Ok(c) => {
                assert!(c.validate().is_ok());
                ok += 1;
            }
            Err(e) => {
                assert!(!e.0.contains('\n'), "multi-line error: {e}");
                assert!(
                    e.0.starts_with("fuzz.toml"),
                    "error does not name the file: {e}"
                );
            }
        }
    }
    // Many single-character mutations land in comments and keep the config valid.
    assert!(ok > 100, "only {ok} mutated configs parsed");
}

/// Random overrides give a valid config or one line; a config that validates also builds
/// every plug-in it names (a fault the engine lacks was found only when a run built it) and
/// keeps a trace's largest gap inside the picosecond clock (a 1e-300 GHz requester overflowed
/// it).
#[test]
fn random_overrides_never_panic() {
    let base = SimConfig::preset("nvm-ppo").unwrap();
    let keys = [
        "device.banks",
        "device.row_bytes",
        "device.mapping",
        "device.timing.trcd_ns",
        "device.timing.tck_ns",
        "controller.write_queue",
        "controller.drain_low",
        "controller.scheduler",
        "controller.logging",
        "controller.logging_fault",
        "controller.ordering_fault",
        "network.fault",
        "replay.cpu_ghz",
        "cpu.ghz",
        "nope.key",
        "device",
    ];
    let values = [
        "0",
        "-1",
        "7",
        "64",
        "1e300",
        "1e-300",
        "0.0001",
        "nan",
        "\"x\"",
        "true",
        "page",
        "[1]",
        "",
        "redu",
        "blom",
        "no-adr-flush",
        "fence-skips-ack",
        "ignore-dependencies",
    ];
    for k in keys {
        for v in values {
            match base.with_overrides(&[format!("{k}={v}")]) {
                Err(e) => assert!(!e.0.contains('\n'), "{e}"),
                Ok(c) => {
                    if let Err(e) = pmsim::plugins::Plugins::build(&c) {
                        panic!("{k}={v} validates but does not build: {e}");
                    }
                    for clock in [TraceClock::Cpu, TraceClock::Memory] {
                        assert!(
                            c.trace_cycle_ps(clock)
                                .checked_mul(u32::MAX as u64)
                                .is_some(),
                            "{k}={v}: a gap of u32::MAX cycles overflows the clock"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn overrides_name_a_repeated_key_and_an_integer_out_of_range() {
    let base = SimConfig::preset("optane").unwrap();
    let e = base
        .with_overrides(&["controller.adr=true".into(), "controller.adr=false".into()])
        .unwrap_err();
    assert!(e.0.contains("key `controller.adr` given twice"), "{e}");
    let e = base
        .with_overrides(&["controller.write_queue=99999999999999999999".into()])
        .unwrap_err();
    assert!(e.0.contains("99999999999999999999 is out of range"), "{e}");
}

/// A section written as an array of tables (`[[controller]]`) is named as such; serde had
/// read the array into the struct field by field and said "invalid type: map, expected u32".
#[test]
fn a_section_written_as_an_array_of_tables_is_named() {
    let e = SimConfig::from_toml_str("[[controller]]\nread_queue = 4\n", "a.toml").unwrap_err();
    assert_eq!(
        e.0,
        "a.toml:1: `controller` must be one table (`[controller]`), not an array of tables"
    );
    let text = "preset = \"nvm-ppo\"\n[[bmo]]\naes_ns = 1\n";
    let e = SimConfig::from_toml_str(text, "b.toml").unwrap_err();
    assert!(
        e.0.starts_with("b.toml:2: `bmo` must be one table"),
        "{}",
        e.0
    );
    let e = SimConfig::from_toml_str("[[caches.l1d]]\nways = 4\n", "c.toml").unwrap_err();
    assert!(
        e.0.starts_with("c.toml:1: `caches.l1d` must be one table"),
        "{}",
        e.0
    );
    // A list where a table belongs had serde fill the fields in order: cores 1, 2 threads each.
    let e = SimConfig::from_toml_str("name = \"x\"\ncpu = [1, 2]\n", "d.toml").unwrap_err();
    assert_eq!(
        e.0,
        "d.toml:2: `cpu` must be one table (`[cpu]`), not a list"
    );
    let e = SimConfig::from_toml_str("[device]\ntiming = [1.0]\n", "e.toml").unwrap_err();
    assert!(
        e.0.starts_with("e.toml:2: `device.timing` must be one table"),
        "{}",
        e.0
    );
    let base = SimConfig::preset("nvm-ppo").unwrap();
    let e = base.with_overrides(&["cpu=[1, 2]".into()]).unwrap_err();
    assert!(
        e.0.starts_with("--set cpu=[1, 2]: `cpu` is a section"),
        "{}",
        e.0
    );
}
