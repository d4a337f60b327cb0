//! Which wheels of a lock fit the node platform a bundle targets: CPython
//! `3.M` on Linux, one architecture, glibc at least the `--manylinux` tag
//! (PEP 425's tags, PEP 600's `manylinux_X_Y`, and the legacy aliases of
//! PEPs 513, 571 and 599), as `packaging.tags` orders them for CPython.
//!
//! Invariant: a wheel is kept only if an installer on every such node may
//! pick it; one needing a newer glibc than the floor is left out, since a
//! node at the floor could not install it.

/// The legacy manylinux names and the glibc each stands for.
const LEGACY: [(&str, (u32, u32)); 3] = [
    ("manylinux1", (2, 5)),
    ("manylinux2010", (2, 12)),
    ("manylinux2014", (2, 17)),
];

/// The node platform: `x86_64`/`aarch64`, CPython `3.{minor}`, glibc floor.
#[derive(Debug, Clone, Copy)]
pub struct Platform {
    pub machine: &'static str,
    pub minor: u64,
    pub glibc: (u32, u32),
}

/// Whether the wheel `filename` installs on every node of `p`; `None` for a
/// name that is not a wheel's.
pub fn fits(filename: &str, p: &Platform) -> Option<bool> {
    let stem = filename.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    if parts.len() != 5 && parts.len() != 6 {
        return None;
    }
    let n = parts.len();
    let (py, abi, plat) = (parts[n - 3], parts[n - 2], parts[n - 1]);
    let interp_ok = py
        .split('.')
        .any(|py| abi.split('.').any(|abi| interpreter_fits(py, abi, p.minor)));
    let plat_ok = plat.split('.').any(|t| platform_fits(t, p));
    Some(interp_ok && plat_ok)
}

fn minor_of(tag: &str, prefix: &str) -> Option<u64> {
    tag.strip_prefix(prefix)?.parse().ok()
}

fn interpreter_fits(py: &str, abi: &str, minor: u64) -> bool {
    let cp = format!("cp3{minor}");
    match abi {
        // cp3M-cp3M: built for exactly this interpreter.
        a if a == cp => py == cp,
        // cp3N-abi3 for N <= M: the stable ABI from 3.N on.
        "abi3" => minor_of(py, "cp3").is_some_and(|n| (2..=minor).contains(&n)),
        // Pure Python for 3 or 3.N <= M, or CPython 3.M without an ABI.
        "none" => py == "py3" || py == cp || minor_of(py, "py3").is_some_and(|n| n <= minor),
        _ => false,
    }
}

fn platform_fits(tag: &str, p: &Platform) -> bool {
    if tag == "any" || tag == format!("linux_{}", p.machine) {
        return true;
    }
    let Some(head) = tag.strip_suffix(&format!("_{}", p.machine)) else {
        return false;
    };
    if let Some((_, glibc)) = LEGACY.iter().find(|(name, _)| *name == head) {
        return *glibc <= p.glibc;
    }
    let Some(v) = head.strip_prefix("manylinux_") else {
        return false;
    };
    let Some((x, y)) = v.split_once('_') else {
        return false;
    };
    match (x.parse::<u32>(), y.parse::<u32>()) {
        (Ok(x), Ok(y)) => (x, y) <= p.glibc,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Platform = Platform {
        machine: "x86_64",
        minor: 11,
        glibc: (2, 28),
    };

    #[test]
    fn wheels_that_fit_cpython_311_x86_64_glibc_228() {
        for (name, want) in [
            ("click-8.3.0-py3-none-any.whl", true),
            ("six-1.17.0-1-py2.py3-none-any.whl", true),
            (
                "m-3.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                true,
            ),
            ("m-3.0-cp312-cp312-manylinux_2_17_x86_64.whl", false),
            ("m-3.0-cp311-cp311-manylinux_2_17_aarch64.whl", false),
            ("m-3.0-cp311-cp311-musllinux_1_2_x86_64.whl", false),
            ("m-3.0-cp311-cp311-win_amd64.whl", false),
            ("m-3.0-cp311-cp311-macosx_11_0_arm64.whl", false),
            ("b-1.0-cp39-abi3-manylinux_2_17_x86_64.whl", true),
            ("b-1.0-cp312-abi3-manylinux_2_17_x86_64.whl", false),
            ("t-1.0-py3-none-manylinux_2_28_x86_64.whl", true),
            ("s-1.0-cp312-cp312-manylinux_2_34_x86_64.whl", false),
            ("s-1.0-cp311-cp311-manylinux_2_34_x86_64.whl", false),
            ("o-1.0-cp311-cp311-manylinux1_x86_64.whl", true),
            ("o-1.0-cp311-cp311-linux_x86_64.whl", true),
            ("p-1.0-py310-none-any.whl", true),
            ("p-1.0-py313-none-any.whl", false),
        ] {
            assert_eq!(fits(name, &P), Some(want), "{name}");
        }
        assert_eq!(fits("x-1.0.tar.gz", &P), None);
        assert_eq!(fits("x-y.whl", &P), None);
    }
}
