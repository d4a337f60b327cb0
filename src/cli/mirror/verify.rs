//! `llmgw mirror verify`: hashes every blob of a store again and names
//! what is damaged or unreferenced.

use crate::cli::progress::Blobs;
use clap::Args;
use llmgw_mirror::StoreLocation;
use llmgw_mirror::verify_store;

use crate::cli::help;
use crate::cli::{OutputArg, StoreArg, print};

#[derive(Args, Debug)]
#[command(after_help = help::after(help::STORE_VERIFY, help::STORE_VERIFY_EXIT_CODES))]
pub struct VerifyStoreArgs {
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub s3: crate::cli::s3::S3Arg,
    #[command(flatten)]
    pub output: OutputArg,
}

pub fn run_verify(a: VerifyStoreArgs) -> anyhow::Result<()> {
    // A bucket is checked under its lock object, as a folder under its
    // store lock, so no import, gc or remove changes it during the walk.
    // Reads only, but under the bucket's lock object (as a folder under its
    // shared store lock), so nothing is published after it.
    let location = a.store.location(&a.s3);
    let session = location.open(Some("llmgw mirror verify"))?;
    let r = verify_store(session.store(), &Blobs::new("checking"))?;
    if a.output.json {
        print(&format!("{}\n", serde_json::to_value(&r)?))?;
    } else {
        let mut out = String::new();
        for d in &r.damaged {
            out.push_str(&format!("DAMAGED {}: {}\n", d.path.display(), d.problem));
        }
        for p in &r.unreferenced {
            out.push_str(&format!(
                "UNREFERENCED {}: intact, but no held bundle names it (a removed bundle's, or \
                 left by an import killed while it committed); `llmgw mirror gc` removes it\n",
                p.display()
            ));
        }
        out.push_str(&format!(
            "checked {} ({} bytes) and {}: {}\n",
            llmgw_shared::plural(r.blobs_checked, "blob", "blobs"),
            r.bytes_checked,
            llmgw_shared::plural(r.bundles, "bundle", "bundles"),
            if r.damaged.is_empty() {
                "all intact".to_string()
            } else {
                format!("{} damaged", r.damaged.len())
            }
        ));
        print(&out)?;
    }
    if r.damaged.is_empty() {
        return Ok(());
    }
    match location {
        StoreLocation::Bucket(_) => anyhow::bail!(
            "{} damaged object(s) in {}; delete each damaged object (with any S3 client) and \
             import again the bundles that carry them: an import of a held bundle puts back only \
             the blobs the bucket lacks",
            r.damaged.len(),
            location.display()
        ),
        StoreLocation::Folder(_) => anyhow::bail!(
            "{} damaged file(s) in {}; remove the damaged blobs and import the bundles that carry \
             them again",
            r.damaged.len(),
            a.store.path.display()
        ),
    }
}
