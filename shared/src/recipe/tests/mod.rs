//! Every decision of the Go table, as a case: which builds a machine gets,
//! in which order, with which files, and the words of every refusal; one
//! file per part of the table, the shared helpers here.

use super::*;

mod engines;
mod llamacpp;
mod table;

const V: &str = "b6123";

fn variants(bs: &[Build]) -> Vec<&str> {
    bs.iter().map(|b| b.variant.as_str()).collect()
}

fn gpu(arch: &str, driver: &str, cc: f64) -> Host {
    Host::nvidia(arch, driver, cc)
}

fn ok(engine: &str, version: &str, variant: Option<&str>, h: &Host) -> Vec<Build> {
    match candidates(engine, version, variant, h) {
        Ok(bs) => bs,
        Err(e) => panic!("{engine} {version} {variant:?} on {h:?}: {e}"),
    }
}

fn err(engine: &str, version: &str, variant: Option<&str>, h: &Host) -> RecipeError {
    match candidates(engine, version, variant, h) {
        Ok(bs) => panic!("{engine} {version} on {h:?} gave {:?}", variants(&bs)),
        Err(e) => e,
    }
}

fn llama(h: &Host) -> Vec<String> {
    ok("llamacpp", V, None, h)
        .iter()
        .map(|b| b.variant.clone())
        .collect()
}

fn pk(pairs: &[(&str, &[&str])]) -> std::collections::BTreeMap<String, Vec<String>> {
    packages(pairs)
}
