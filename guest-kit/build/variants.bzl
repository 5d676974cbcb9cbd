"""The guest kernel's variants: which seed changes each built image has.

One place for these facts: the kernel images (guest-kit/BUILD.bazel) and the host's
variant table (vmm/images, generated from VARIANTS below) both come from here.
"""

# key: (the config switch in guest-kit/kernel/config.h, old value, new value, seed)
SEEDS = {
    "dr7": ("CONFIG_DR7_LAZY", "always", "lazy", "000"),
    "pda": ("CONFIG_PDA_DIRECT", "gs", "direct", "001"),
    "uaccess": ("CONFIG_UACCESS_CERR", "err_or", "cerr", "002"),
    "dequeue": ("CONFIG_DEQUEUE_POINTER", "copy", "pointer", "003"),
}

SEED_KEYS = ["dr7", "pda", "uaccess", "dequeue"]

def _variant(new_keys):
    """A variant as the set of seed keys that have the new behaviour."""
    return {key: (key in new_keys) for key in SEED_KEYS}

def variant_name(variant):
    """The canonical --variant name: 'baseline', 'accelerated', 'dr7=lazy',
    'accelerated,dr7=always'."""
    new = [key for key in SEED_KEYS if variant[key]]
    old = [key for key in SEED_KEYS if not variant[key]]
    if not new:
        return "baseline"
    if not old:
        return "accelerated"
    if len(new) <= len(old):
        return ",".join(["%s=%s" % (key, SEEDS[key][2]) for key in new])
    return "accelerated," + ",".join(["%s=%s" % (key, SEEDS[key][1]) for key in old])

def variant_id(variant):
    """A file-name-safe form of the name: 'accelerated-dr7-always'."""
    return variant_name(variant).replace(",", "-").replace("=", "-")

def variant_copts(variant):
    return ["-D%s=%d" % (SEEDS[key][0], 1 if variant[key] else 0) for key in SEED_KEYS]

# Built and embedded: the baseline, everything new, each change alone, and everything
# new but one change. Other combinations are refused with this list.
VARIANTS = (
    [_variant([])] +
    [_variant(SEED_KEYS)] +
    [_variant([key]) for key in SEED_KEYS] +
    [_variant([k for k in SEED_KEYS if k != key]) for key in SEED_KEYS]
)

def variant_table_cc_lines(symbol_prefix):
    """X-macro lines for vmm/images/embedded_images.cc:
    SIGVISOR_SEED(key, old, new, seed, config) for each seed, then
    SIGVISOR_VARIANT(symbol, name, value...) for each built variant."""
    lines = []
    for key in SEED_KEYS:
        config, old, new, seed = SEEDS[key]
        lines.append('SIGVISOR_SEED("%s", "%s", "%s", "%s", "%s")' % (key, old, new, seed, config))
    for variant in VARIANTS:
        values = ", ".join(['"%s"' % (SEEDS[key][2] if variant[key] else SEEDS[key][1]) for key in SEED_KEYS])
        symbol = symbol_prefix + variant_id(variant).replace("-", "_")
        lines.append('SIGVISOR_VARIANT(%s, "%s", %s)' % (symbol, variant_name(variant), values))
    return lines
