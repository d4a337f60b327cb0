//! The text under each command's `--help`: an "Examples:" section, then
//! what the exit codes mean where they say more than done/failed. Kept in
//! one place so that every command has both, worded alike; the man pages
//! (`llmgw manpage`) carry the same text.

/// Examples, then the exit codes, as clap's `after_help`.
pub fn after(examples: &str, exit_codes: &str) -> String {
    format!(
        "Examples:\n{}\n\n{}",
        examples.trim_end(),
        exit_codes.trim()
    )
}

/// Examples, then `more` (a command's own notes, ending in its exit codes).
pub fn after_notes(examples: &str, more: &str) -> String {
    format!("Examples:\n{}\n\n{}", examples.trim_end(), more.trim())
}

/// Every command that only does or fails.
pub const EXIT_CODES: &str = "Exit codes: 0 done, 1 refused or failed (the reason is on stderr), \
                              2 usage error (a bad flag or value).";

/// Import's: a bundle held already is not a failure.
pub const IMPORT_EXIT_CODES: &str = "Exit codes: 0 done (also: already imported, or volumes \
                                     accepted so far), 1 refused or failed (the reason is on \
                                     stderr; the store is as before), 2 usage error.";

pub const TOP: &str = "  llmgw recipe builds llamacpp b6123 --arch amd64
  llmgw bundle create --out site.tar.zst --arch amd64 --engine llamacpp=b6123 --model acme/tiny
  llmgw bundle trust add llmgw-release.pub --store /srv/mirror
  llmgw bundle import site.tar.zst --sha256 site.tar.zst.sha256 --store /srv/mirror
  llmgw mirror serve --store /srv/mirror --listen 0.0.0.0:8080
  llmgw completions bash > /etc/bash_completion.d/llmgw
  llmgw manpage --dir /usr/local/share/man/man1";

pub const TOP_EXIT_CODES: &str = "\
Exit codes (every command): 0 done, 1 refused or failed (the reason is on stderr),
2 usage error, 130 stopped by Ctrl-C. See each command's --help for what they mean there.";

pub const RECIPE: &str = "  llmgw recipe builds llamacpp b6123 --arch amd64
  llmgw recipe candidates llamacpp b6123 --arch amd64 --driver 550.54.15 --cc 8.6
  llmgw recipe environments vllm 0.20.1 --arch arm64 --json
  llmgw recipe images vllm 0.34.0 --arch amd64 --driver 575.57.08";

pub const RECIPE_EXIT_CODES: &str = "\
Exit codes: 0 answered, 1 the table refuses (no build fits, an unknown variant or version;
the reason is on stderr), 2 usage error (a bad flag, --arch that is not amd64 or arm64,
a --driver that is not a version).";

pub const CANDIDATES: &str = "  # a node with an RTX 3090 (compute capability 8.6) on driver 550
  llmgw recipe candidates llamacpp b6123 --arch amd64 --driver 550.54.15 --cc 8.6
  # a node with no NVIDIA GPU
  llmgw recipe candidates llamacpp b6123 --arch arm64 --json";

pub const BUILDS: &str = "  llmgw recipe builds llamacpp b6123 --arch amd64
  llmgw recipe builds uv 0.12.20 --arch arm64 --json";

pub const ENVIRONMENTS: &str = "  llmgw recipe environments vllm 0.20.1 --arch amd64
  llmgw recipe environments sglang 0.5.4 --arch arm64 --json";

pub const IMAGES: &str = "  # every vLLM 0.34.0 image for amd64 nodes
  llmgw recipe images vllm 0.34.0 --arch amd64
  # the ones a node on driver 575 runs (the CUDA 12.9 build only)
  llmgw recipe images vllm 0.34.0 --arch arm64 --driver 575.57.08 --json
  # llama.cpp's server images of a build (or a SemVer release: v0.4.1)
  llmgw recipe images llamacpp b9300 --arch arm64";

pub const KERNELS: &str =
    "  # the folders of v1, and which loads on a CUDA 13.0 torch 2.11 node and a CPU node
  llmgw recipe kernels kernels-community/activation@v1 \\
      --node torch2.11,cu130,x86_64 --node none,cpu,x86_64
  # every folder of the newest vN, as JSON
  llmgw recipe kernels kernels-community/activation --json";

/// How `recipe kernels` decides, and what its exit codes mean.
pub const KERNELS_NOTES: &str = "\
A node is TORCH,BACKEND,CPU as a miss records it (`llmgw mirror misses`): torch's major.minor
(or none), the backend torch is built for (cpu, cu130, rocm64), the CPU (x86_64, aarch64).
An arch build loads where torch matches exactly and CUDA's major matches with a minor no
newer than the node's; a noarch build (torch-cpu, torch-universal) by backend. HF_TOKEN, when
set, is sent to the Hub only.

Exit codes: 0 answered, 1 the Hub refused or a folder is no build variant (named), 2 usage
error (a bad repository id or --node).";

/// What `recipe images` lists, and how `bundle create` picks among it.
pub const IMAGES_NOTES: &str = "\
The plain vLLM tag (v0.34.0) is the CUDA 13.0 build and needs driver 580; -cu129 runs on 525
and newer. `bundle create --engine-image vllm=0.34.0 --driver D` carries the first image listed
for --driver D (the site's newest driver); without --driver, every image listed;
`vllm=0.34.0:cu129` only that variant. llama.cpp's server images (ghcr.io/ggml-org/llama.cpp)
are server-cuda13 (driver 580), server-cuda (CUDA 12.8: 570, the driver its PTX needs),
server-vulkan and the CPU server; with --driver, create carries the best one and the CPU server
for nodes with no GPU. A driver runs no CPU image unless --variant cpu names it.

";

/// What `recipe environments` lists, and how `bundle create` picks among it.
pub const ENVIRONMENTS_NOTES: &str = "\
Each environment is named ENGINE-VERSION-VARIANT-ARCH. `bundle create --engine vllm=0.33.0`
carries every one of them (the CUDA 12.9 variant needs GitHub and the PyTorch index; the
fallback for older GPUs is another version); `--engine vllm=0.33.0:cu13` carries only the
VARIANT named (repeat --engine for several), from PyPI alone for cu13. The glibc under NODE NEEDS is
the lowest manylinux tag at which every wheel of the environment exists (read from the
wheels' tags on PyPI): what `bundle create` resolves it for unless --manylinux says else.

";

pub const BUNDLE: &str = "  llmgw bundle create --out site.tar.zst --arch amd64,arm64 --engine llamacpp=b6123 --model acme/tiny
  llmgw bundle verify site.tar.zst --sha256 site.tar.zst.sha256
  llmgw bundle import site.tar.zst --sha256 site.tar.zst.sha256 --store /srv/mirror";

pub const CREATE: &str =
    "  # llama.cpp for both architectures and one model, into one compressed bundle
  llmgw bundle create --out site.tar.zst --arch amd64,arm64 \\
      --engine llamacpp=b6123 --model acme/tiny@main
  # llmgw's own signed release too (its SHA256SUMS must be signed by the key)
  llmgw bundle create --out site.tar.zst --arch amd64 --llmgw v0.5.0 \\
      --trust llmgw-release.pub --engine uv=0.12.20
  # the settings from a file, signed with the site's key
  llmgw bundle create --spec site.toml --sign-key site.key --expires 90d
  # what nodes asked the mirror for and it lacked (llmgw mirror misses --out want.json)
  llmgw bundle create --spec site.toml --want want.json --out wants.tar.zst
  # vLLM's image for a site whose newest NVIDIA driver is 575 (the -cu129 build),
  # fetched through the site's Docker Hub cache, served as docker.io/vllm/vllm-openai
  llmgw bundle create --out vllm.tar.zst --arch amd64 --engine-image vllm=0.34.0 \\
      --driver 575.57.08 --registry docker.io=https://cache.site.example
  # vLLM with the Hub kernels its nodes load (the build folders for its torch and CUDA)
  llmgw bundle create --out vllm.tar.zst --arch amd64 --engine vllm=0.34.0 \\
      --kernel kernels-community/activation@v1 --kernels-lock kernels.lock
  # a tool environment whose project's files must carry PEP 740 attestations by the
  # workflow named (PyPI's provenance checked at create, carried, checked at import)
  llmgw bundle create --out tools.tar.zst --arch amd64 --python-env tools=acme-tool \\
      --identity pypi:acme-tool=https://token.actions.githubusercontent.com,\\
https://github.com/acme/acme-tool/.github/workflows/release.yml@";

/// `bundle create`'s notes after its examples: the spec file's keys, the
/// output, credentials, exit codes.
pub const CREATE_NOTES: &str = "\
Flags may also come from a TOML file (--spec FILE) with the same names, lists plural:
  out, arch, llmgw, llmgw_repo, llmgw_api, trust, engines, models, datasets, kernels,
  kernels_lock,
  github_api, hf_endpoint, cache, jobs, zstd_level, allow_missing, python_envs, pypi,
  indexes, uv, manylinux, github_raw, volume_size, chunk_size, parity, images, charts,
  insecure_registries, registries, engine_images, driver, python_interpreter, overrides,
  constraints, python, identities, trusted_root, allow_unsigned_upstream.
Flags override the file; a list flag replaces the file's list. Relative paths in the
file are relative to the file's folder.

The output format follows the --out name: NAME.tar.zst, NAME.tar, or else a directory.
stdout gets the manifest sha256 (the bundle's identity), also written to OUT.sha256 as
`<hex>  manifest.json`; carry it apart from the bundle. HF_TOKEN, when set, is sent to
the Hub's origin only, and never written anywhere. SOURCE_DATE_EPOCH makes the bundle
byte-for-byte reproducible (and is the `created` annotation of a --chart PATH.tgz,
else the file's mtime). Registry credentials come from $REGISTRY_AUTH_FILE or
~/.docker/config.json (`docker login`), and go only to that registry and its token realm.

Exit codes:
  0  the bundle was written
  1  it failed: an upstream, a digest, a signature, free space, the disk (reason on stderr)
  2  usage: bad flags or spec file, or a request the recipe table refuses
     (an unknown engine, a bad version, an --index no environment uses)";

pub const SIGN: &str = "  llmgw bundle sign site.tar.zst --key site.key
  LLMGW_SIGN_PASSWORD=... llmgw bundle sign site-dir --key site.key";

pub const IMPORT: &str = "  llmgw bundle import site.tar.zst --sha256 site.tar.zst.sha256 --store /srv/mirror
  llmgw bundle import site.tar.zst --sha256 $(cut -d' ' -f1 site.tar.zst.sha256) --store /srv/mirror --json
  # a bundle signed by a key trusted with --role bundle needs no --sha256
  LLMGW_STORE=/srv/mirror llmgw bundle import update.tar.zst";

pub const VERIFY: &str = "  llmgw bundle verify site.tar.zst --sha256 site.tar.zst.sha256
  llmgw bundle verify site.tar.zst --sha256 site.tar.zst.sha256 --trust llmgw-release.pub";

pub const REHEARSE: &str = "  llmgw bundle rehearse site.tar.zst --sha256 site.tar.zst.sha256
  llmgw bundle rehearse site.tar.zst --sha256 site.tar.zst.sha256 --trust llmgw-release.pub --json
  llmgw bundle create --out site.tar.zst ... --rehearse";

pub const INSPECT: &str = "  llmgw bundle inspect site.tar.zst
  llmgw bundle inspect site.tar.zst --json";

pub const SBOM: &str = "  llmgw bundle sbom site.tar.zst > site.cdx.json
  curl http://mirror:8080/-/bundles/$(cut -c1-64 site.tar.zst.sha256)/sbom.cdx.json";

pub const TRUST: &str = "  llmgw bundle trust add llmgw-release.pub --store /srv/mirror
  llmgw bundle trust add site.pub --role bundle --store /srv/mirror
  llmgw bundle trust list --store /srv/mirror
  llmgw bundle trust remove 6835A28BBCA54F3B --store /srv/mirror";

pub const TRUST_ADD: &str = "  llmgw bundle trust add llmgw-release.pub --store /srv/mirror
  llmgw bundle trust add site.pub --role bundle --store /srv/mirror";

pub const TRUST_LIST: &str = "  llmgw bundle trust list --store /srv/mirror
  llmgw bundle trust list --store /srv/mirror --json";

pub const TRUST_REMOVE: &str = "  llmgw bundle trust remove 6835A28BBCA54F3B --store /srv/mirror
  llmgw bundle trust remove 6835A28BBCA54F3B --role bundle --store /srv/mirror";

pub const MIRROR: &str = "  llmgw mirror serve --store /srv/mirror --listen 0.0.0.0:8080
  llmgw mirror list --store /srv/mirror
  llmgw mirror verify --store /srv/mirror
  llmgw mirror remove 3eb9 --store /srv/mirror && llmgw mirror gc --store /srv/mirror";

pub const MISSES: &str = "  llmgw mirror misses --store /srv/mirror
  llmgw mirror misses --store /srv/mirror --out want.json
  # on the connected side: carry what was missed (with the request that made the site)
  llmgw bundle create --spec site.toml --want want.json --out wants.tar.zst";

pub const ENV: &str =
    "  llmgw mirror env --store /srv/mirror --url http://mirror.site.internal:8080
  llmgw mirror env --store /srv/mirror --url http://mirror.site.internal:8080 --json
  curl http://mirror.site.internal:8080/-/env   # the same, from the serving mirror";

pub const LIST: &str = "  llmgw mirror list --store /srv/mirror
  LLMGW_STORE=/srv/mirror llmgw mirror list --json";

pub const LIST_EXIT_CODES: &str = "\
Exit codes: 0 listed, 1 a held manifest cannot be read (the others are listed; the damaged
one is named on stderr), 2 usage error.";

pub const GC: &str = "  llmgw mirror gc --store /srv/mirror --dry-run
  llmgw mirror gc --store /srv/mirror --json";

pub const REMOVE: &str = "  llmgw mirror remove 3eb9 --store /srv/mirror
  llmgw mirror remove $(cut -d' ' -f1 site.tar.zst.sha256) --store /srv/mirror";

pub const EXPORT: &str =
    "  llmgw mirror export 3eb9 --store /srv/mirror --out /media/usb/site.tar.zst
  llmgw mirror export 3eb9 --store /srv/mirror --out /media/usb/site   # a directory";

pub const PUSH: &str = "  llmgw mirror push --store /srv/mirror --to harbor.site/llmgw --all
  llmgw mirror push --store /srv/mirror --to harbor.site/llmgw --image vllm/vllm-openai --tags merge
  llmgw mirror push --store /srv/mirror --to 10.0.0.5:5000 --insecure-registry --models acme/tiny
  # credentials: $REGISTRY_AUTH_FILE, else ~/.docker/config.json (as bundle create --image)";

pub const STORE_VERIFY: &str = "  llmgw mirror verify --store /srv/mirror
  llmgw mirror verify --store /srv/mirror --json
  llmgw mirror verify --store s3://llmgw/site-a   # every object read back and hashed";

pub const STORE_VERIFY_EXIT_CODES: &str = "\
Exit codes: 0 every blob and manifest is intact, 1 damage found (each damaged file is named
on stdout) or the check failed, 2 usage error.";

pub const POLICY: &str = "  llmgw mirror policy --store /srv/mirror
  llmgw mirror policy require-signature on --store /srv/mirror
  llmgw mirror policy enforce-expiry off --store /srv/mirror
  llmgw mirror policy follow RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0A8ka0 stable --store /srv/mirror
  llmgw mirror policy model-files no-pickle --store /srv/mirror";

pub const HAVE: &str = "  llmgw mirror have --store /srv/mirror --out have.json
  # then, on the connected side, a bundle of only what the store lacks:
  llmgw bundle create --spec site.toml --have have.json --out delta.tar.zst";

pub const SERVE: &str = "  llmgw mirror serve --store /srv/mirror
  llmgw mirror serve --store /srv/mirror --listen 0.0.0.0:8080 --public-url https://mirror.example
  llmgw mirror serve --store /srv/mirror --listen localhost:8443 \\
      --tls-cert cert.pem --tls-key key.pem --token-file token
  # then, on a node:
  HF_ENDPOINT=http://mirror:8080 hf download acme/tiny";

pub const SERVE_EXIT_CODES: &str = "\
Exit codes: 0 stopped by SIGTERM or Ctrl-C after finishing requests in flight, 1 cannot
start (the store cannot be read or is not a store, the address is taken, a bad TLS file or
token file; the reason is on stderr), 2 usage error (a bad flag, an --listen that is not
ADDRESS:PORT).";

pub const COMPLETIONS: &str = "  llmgw completions bash > /etc/bash_completion.d/llmgw
  llmgw completions zsh > \"${fpath[1]}/_llmgw\"
  llmgw completions fish > ~/.config/fish/completions/llmgw.fish";

pub const MANPAGE: &str = "  llmgw manpage | man -l -
  llmgw manpage --dir /usr/local/share/man/man1 && man llmgw-bundle-create";
