//! `pmlab ec`: erasure-code files with pmec and measure pmec beside ISA-L.

use clap::Subcommand;
use pmec::bench::{self, BenchConfig, DataPool, Workload};
use pmec::files::{self, EncodeOptions};
use pmec::{Isa, MatrixKind, Strategy};
use std::path::PathBuf;

/// `pmlab ec` subcommands.
#[derive(Subcommand)]
pub enum EcCommand {
    /// Split FILE into k data + m parity shard files and a manifest (`<name>.pmec`) in DIR.
    Encode {
        /// File to protect.
        file: PathBuf,
        /// Output directory for the shards and the manifest.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Data shards.
        #[arg(short, default_value_t = 8)]
        k: usize,
        /// Parity shards (the file survives the loss of any m shards; at least 1).
        #[arg(short, default_value_t = 4,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        m: usize,
        /// Stripe unit in bytes.
        #[arg(long, default_value_t = 65536, value_name = "BYTES")]
        block: usize,
        /// Generator matrix: `cauchy` (always MDS) or `vandermonde` (ISA-L's gf_gen_rs_matrix).
        #[arg(long, default_value = "cauchy")]
        matrix: String,
        /// Encoder threads (1 to 1024).
        #[arg(long, default_value_t = 1,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
        threads: usize,
    },
    /// Rebuild the original file from any k intact shards; reports missing and corrupt ones.
    Decode {
        /// The manifest written by `encode`.
        manifest: PathBuf,
        /// Where to write the rebuilt file.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Also rewrite missing or corrupt shards.
        #[arg(long)]
        repair: bool,
    },
    /// Check every shard's checksum and, when all are intact, that parity matches the data; exit
    /// status 1 when anything is wrong, a shard missing or corrupt included (even if the file
    /// can still be rebuilt).
    Verify {
        /// The manifest written by `encode`.
        manifest: PathBuf,
    },
    /// Measure pmec beside ISA-L (system libisal.so.2, same process, same data).
    Bench {
        /// Data blocks per stripe.
        #[arg(short, default_value_t = 8)]
        k: usize,
        /// Parity blocks per stripe (at least 1).
        #[arg(short, default_value_t = 4,
              value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
        m: usize,
        /// Block size in bytes.
        #[arg(long, default_value_t = 1024, value_name = "BYTES")]
        block: usize,
        /// Threads (1 to 1024).
        #[arg(long, default_value_t = 1)]
        threads: usize,
        /// Measure decoding with this many erasures instead of encoding.
        #[arg(long, value_name = "E")]
        decode: Option<usize>,
        /// Measure LRC with this many local groups instead of RS.
        #[arg(long, value_name = "L")]
        lrc: Option<usize>,
        /// Reuse a cache-sized working set (the kernels' ceiling) instead of 1 GiB of data.
        #[arg(long)]
        in_cache: bool,
        /// Size of the pre-filled data pool in MiB (random stripe order over it).
        #[arg(long, default_value_t = 1024, value_name = "MIB")]
        pool_mb: usize,
        /// Kernel: auto, scalar, ssse3, avx2, avx512, avx2-gfni, avx512-gfni.
        #[arg(long, default_value = "auto")]
        isa: String,
        /// DIALGA strategy: auto, vanilla, sw, bf, nohw, pressure, ahead.
        #[arg(long, default_value = "auto")]
        strategy: String,
        /// Stripes per pmec call (1 = one call per stripe, as ISA-L is called).
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// With --threads above 1: split each batch across the threads by one thread-pool call,
        /// as a caller of the pool API does, instead of one split per repetition.
        #[arg(long)]
        split_batches: bool,
        /// Timed repetitions per side, pmec and ISA-L alternating (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Source data encoded per repetition, in MiB (raise it where one repetition takes only
        /// milliseconds, e.g. with many threads).
        #[arg(long, default_value_t = 256, value_name = "MIB")]
        mb_per_rep: usize,
        /// The ISA-L library to compare with (default: `PMEC_ISAL`, else the system's
        /// libisal.so.2), e.g. a newer release built from source.
        #[arg(long, value_name = "PATH")]
        isal: Option<String>,
    },
    /// The path real ISA-L clients take, one stripe per `ec_encode_data` call: run the
    /// `percall` client (an unmodified program linked against libisal.so.2; `make build`
    /// builds it as target/percall) on each library in interleaved rounds, with a plain move of
    /// the same bytes beside each point.
    Percall {
        /// Points as K:M:BLOCK.
        #[arg(required = true, value_name = "K:M:BLOCK")]
        points: Vec<String>,
        /// A library to run on, as NAME=DIR[,VAR=VALUE...] (DIR holds its libisal.so.2; the
        /// variables are set for the client, e.g. PMEC_STRATEGY=vanilla); repeat for each.
        #[arg(long = "lib", required = true, value_name = "NAME=DIR[,VAR=VALUE]")]
        libs: Vec<String>,
        /// The ratio column compares with this library (default: the first).
        #[arg(long, value_name = "NAME")]
        against: Option<String>,
        /// The client binary.
        #[arg(long, default_value = "target/percall", value_name = "PATH")]
        client: PathBuf,
        /// Interleaved rounds (every library once per round).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Seconds each run spends per point and variant.
        #[arg(long, default_value_t = 0.5)]
        seconds: f64,
        /// Encode a 256 KiB working set over and over instead of stripes in random order.
        #[arg(long)]
        in_cache: bool,
        /// Pool the stripes are drawn from, in MiB.
        #[arg(long, default_value_t = 1024, value_name = "MIB")]
        pool_mb: usize,
    },
}

fn e(err: pmec::Error) -> String {
    err.to_string()
}

/// Runs a `pmlab ec` subcommand.
pub fn run(cmd: EcCommand) -> Result<(), String> {
    match cmd {
        EcCommand::Encode {
            file,
            out,
            k,
            m,
            block,
            matrix,
            threads,
        } => {
            let opts = EncodeOptions {
                k,
                m,
                block,
                matrix: MatrixKind::parse(&matrix).map_err(e)?,
                threads,
            };
            // A folder this run makes goes with an interrupt, as its temporary shards do (an
            // empty folder was left). Made here only where its parent exists; encode_file makes
            // (and refuses) the rest.
            let made = !out.exists()
                && out
                    .parent()
                    .is_none_or(|p| p.as_os_str().is_empty() || p.is_dir())
                && std::fs::create_dir(&out).is_ok();
            let _interrupt = made.then(|| crate::signals::remove_tree_on_interrupt(&out));
            let man = files::encode_file(&file, &out, &opts)
                .map_err(|err| format!("{}: {err}", file.display()))?;
            println!(
                "encoded {} ({} bytes) into {} data + {} parity shards of {} bytes; manifest {}",
                file.display(),
                man.file_size,
                man.k,
                man.m,
                man.shard_len(),
                files::manifest_path(&out, &man.file_name).display()
            );
            Ok(())
        }
        EcCommand::Decode {
            manifest,
            out,
            repair,
        } => {
            let r = files::decode_file(&manifest, &out, repair)
                .map_err(|err| format!("{}: {err}", manifest.display()))?;
            println!(
                "rebuilt {} ({} bytes) from shards {:?}; missing {:?}, corrupt {:?}{}",
                out.display(),
                r.bytes,
                r.used,
                r.check.missing,
                r.check.corrupt,
                if repair {
                    format!(", repaired {:?}", r.repaired)
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        EcCommand::Verify { manifest } => {
            let r =
                files::verify(&manifest).map_err(|err| format!("{}: {err}", manifest.display()))?;
            println!(
                "missing {:?}, corrupt {:?}, recoverable: {}, parity consistent: {}, file checksum: {}",
                r.check.missing,
                r.check.corrupt,
                r.recoverable,
                r.parity_consistent
                    .map_or("not checked (shards missing or corrupt)".into(), |b| b
                        .to_string()),
                match (r.parity_consistent, r.file_matches) {
                    (None, _) => "not checked",
                    (Some(_), None) => "not in the manifest",
                    (Some(_), Some(true)) => "matches",
                    (Some(_), Some(false)) => "differs",
                }
            );
            if r.file_matches == Some(false) {
                return Err(format!(
                    "{}: the data shards do not hold the file that was encoded (its size or the manifest was altered)",
                    manifest.display()
                ));
            }
            if !r.recoverable {
                return Err(format!(
                    "{}: more shards are lost than parity can rebuild",
                    manifest.display()
                ));
            }
            if r.parity_consistent == Some(false) {
                return Err(format!(
                    "{}: parity does not match the data",
                    manifest.display()
                ));
            }
            // Damaged but recoverable is still damaged: a script that checks only the exit
            // status must not take it for healthy.
            if !r.check.missing.is_empty() || !r.check.corrupt.is_empty() {
                return Err(format!(
                    "{}: {} shard(s) missing and {} corrupt; the file can be rebuilt (`pmlab ec \
                     decode --repair` rewrites them)",
                    manifest.display(),
                    r.check.missing.len(),
                    r.check.corrupt.len()
                ));
            }
            Ok(())
        }
        EcCommand::Bench {
            k,
            m,
            block,
            threads,
            decode,
            lrc,
            in_cache,
            pool_mb,
            isa,
            strategy,
            batch,
            split_batches,
            reps,
            mb_per_rep,
            isal,
        } => {
            if decode.is_some() && lrc.is_some() {
                return Err("--decode and --lrc are exclusive".into());
            }
            if threads > 1024 {
                // (a larger figure ran on the cores there are and was labelled as asked)
                return Err(format!("--threads {threads}: at most 1024"));
            }
            let workload = match (decode, lrc) {
                (Some(erasures), _) => Workload::Decode { erasures },
                (_, Some(l)) => Workload::Lrc { l },
                _ => Workload::Encode,
            };
            let cfg = BenchConfig {
                k,
                m,
                block,
                workload,
                threads,
                batch,
                split_batches,
                in_cache,
                isa: if isa == "auto" {
                    None
                } else {
                    Some(Isa::parse(&isa).map_err(e)?)
                },
                strategy: Strategy::parse(&strategy).map_err(e)?,
                reps,
                bytes_per_rep: mb_per_rep
                    .checked_mul(1 << 20)
                    .ok_or_else(|| format!("--mb-per-rep {mb_per_rep}: too large"))?,
                isal_path: isal.or_else(|| std::env::var("PMEC_ISAL").ok()),
                ..BenchConfig::default()
            };
            if pool_mb == 0 {
                return Err("--pool-mb must be at least 1".into());
            }
            if reps == 0 || mb_per_rep == 0 {
                return Err("--reps and --mb-per-rep must be at least 1".into());
            }
            // The point's parameters before the pool (up to GiBs) is filled.
            bench::validate(&cfg).map_err(e)?;
            let pool_bytes = pool_mb
                .checked_mul(1 << 20)
                .ok_or_else(|| format!("--pool-mb {pool_mb}: too large"))?;
            let pool = DataPool::new(pool_bytes).map_err(e)?;
            let r = bench::run(&pool, &cfg).map_err(e)?;
            print!("{}", bench::markdown(std::slice::from_ref(&r)));
            if let Some(note) = &r.isal_note {
                eprintln!("note: {note}");
            }
            Ok(())
        }
        EcCommand::Percall {
            points,
            libs,
            against,
            client,
            rounds,
            seconds,
            in_cache,
            pool_mb,
        } => {
            if !client.exists() {
                return Err(format!(
                    "{}: no such client (build it with `make build`)",
                    client.display()
                ));
            }
            if !(seconds > 0.0 && seconds <= 3600.0) || pool_mb == 0 || rounds == 0 {
                return Err(
                    "--seconds must be in (0, 3600]; --pool-mb and --rounds must be positive"
                        .into(),
                );
            }
            let libs = libs
                .iter()
                .map(|l| crate::percall::Library::parse(l))
                .collect::<Result<Vec<_>, _>>()?;
            // One row per library and point: a repeat would merge into one row with twice the
            // runs the footer states.
            for (i, l) in libs.iter().enumerate() {
                if libs[..i].iter().any(|o| o.name == l.name) {
                    return Err(format!(
                        "--lib {}: a library of that name is given twice",
                        l.name
                    ));
                }
            }
            for (i, p) in points.iter().enumerate() {
                if points[..i].contains(p) {
                    return Err(format!("point {p} is given twice"));
                }
            }
            let against = against.unwrap_or_else(|| libs[0].name.clone());
            if !libs.iter().any(|l| l.name == against) {
                return Err(format!("--against {against}: no library of that name"));
            }
            let rows = crate::percall::compare(
                &client, &libs, &points, rounds, in_cache, seconds, pool_mb,
            )?;
            print!("{}", crate::percall::markdown(&rows, Some(&against)));
            println!(
                "\n{rounds} interleaved rounds, median [min-max]; 1 thread, {}; ratio = encode \
                 median over {against}'s",
                if in_cache {
                    "256 KiB working set".to_string()
                } else {
                    format!("stripes in random order over {pool_mb} MiB")
                }
            );
            Ok(())
        }
    }
}
