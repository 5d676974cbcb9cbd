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
    "tramp": ("CONFIG_TRAMP_VDSO", "stack", "vdso", "004"),
}

# Settings that are no seed's change: how the kernel reaches the VMM, and on how many
# CPUs it runs. Each has its default (every build above) and the other value, built
# only on the bases named below (PV_VARIANTS, SIGNAL_PV_VARIANTS, SMP_VARIANTS).
# key: (the config switch in guest-kit/kernel/config.h, default value, other value)
SETTINGS = {
    # The kernel's debug-register (and segment-base) writes: native instructions, or
    # the paravirtual page --trap=pv supplies (arch/x86_64/guest/debugreg.h).
    "debugreg": ("CONFIG_DEBUGREG_PV", "native", "pv"),
    # Who writes and reads back the signal frame: the kernel, or the VMM with one
    # hypercall each way (arch/x86_64/guest/pv_signal.c).
    "signal": ("CONFIG_SIGNAL_PV", "kernel", "pv"),
    # One CPU, or several (--vcpus N): APs, per-CPU run queues, a big kernel lock and
    # IPIs (docs/guest-kernel.md, "Several CPUs"). Seed 001's pda=direct is a
    # uniprocessor shortcut: an smp=on build always has pda=gs.
    "smp": ("CONFIG_SMP", "off", "on"),
}

# The seeds each arch's images vary. x86-64: all but seed 004 (x86-64 Linux never had
# a stack trampoline). MIPS: the ones with a MIPS side (seeds 000 and 001 are about
# x86 debug registers and %gs).
SEED_KEYS = ["dr7", "pda", "uaccess", "dequeue"]
MIPS_SEED_KEYS = ["uaccess", "dequeue", "tramp"]

def _variant(new_keys, keys = SEED_KEYS):
    """A variant as the set of seed keys that have the new behaviour."""
    return {key: (key in new_keys) for key in keys}

def _seed_name(variant):
    keys = [key for key in SEEDS.keys() if key in variant]
    new = [key for key in keys if variant[key]]
    old = [key for key in keys if not variant[key]]
    if not new:
        return "baseline"
    if not old:
        return "accelerated"
    if len(new) <= len(old):
        return ",".join(["%s=%s" % (key, SEEDS[key][2]) for key in new])
    return "accelerated," + ",".join(["%s=%s" % (key, SEEDS[key][1]) for key in old])

def variant_name(variant):
    """The canonical --variant name: 'baseline', 'accelerated', 'dr7=lazy',
    'accelerated,dr7=always' (for MIPS: 'tramp=vdso', 'accelerated,tramp=stack'); a
    setting at its other value follows: 'debugreg=pv', 'dr7=lazy,debugreg=pv',
    'accelerated,signal=pv', 'accelerated,pda=gs,smp=on'."""
    name = _seed_name(variant)
    settings = ["%s=%s" % (key, SETTINGS[key][2]) for key in SETTINGS.keys() if variant.get(key)]
    if not settings:
        return name
    if name == "baseline":
        return ",".join(settings)
    return ",".join([name] + settings)

def variant_id(variant):
    """A file-name-safe form of the name: 'accelerated-dr7-always'."""
    return variant_name(variant).replace(",", "-").replace("=", "-")

def variant_copts(variant):
    return ["-D%s=%d" % (SEEDS[key][0], 1 if variant[key] else 0) for key in SEEDS.keys() if key in variant] + [
        "-D%s=1" % SETTINGS[key][0]
        for key in SETTINGS.keys()
        if variant.get(key)
    ]

def _variants(keys):
    return (
        [_variant([], keys)] +
        [_variant(keys, keys)] +
        [_variant([key], keys) for key in keys] +
        [_variant([k for k in keys if k != key], keys) for key in keys]
    )

# Built and embedded: the baseline, everything new, each change alone, and everything
# new but one change. Other combinations are refused with this list.
VARIANTS = _variants(SEED_KEYS)

# The builds that also have a debugreg=pv counterpart (--trap=pv boots it): both
# ends of seed 000 (dr7), on the baseline and on the accelerated kernel, which is
# what `bench` (baseline; accelerated) and `study dr7` (baseline, dr7=lazy) compare.
PV_BASES = [
    _variant([]),
    _variant(SEED_KEYS),
    _variant(["dr7"]),
    _variant([key for key in SEED_KEYS if key != "dr7"]),
]

def with_setting(variant, key):
    """`variant` with setting `key` at its other value."""
    out = dict(variant)
    out[key] = True
    return out

PV_VARIANTS = [with_setting(variant, "debugreg") for variant in PV_BASES]

# The builds whose signal frames the VMM writes (signal=pv): the two ends `study
# pvsig` and `bench` compare, the baseline and the accelerated kernel.
SIGNAL_PV_VARIANTS = [with_setting(variant, "signal") for variant in [_variant([]), _variant(SEED_KEYS)]]

# The builds that run on several CPUs (smp=on): the baseline, and the accelerated
# kernel with pda=gs (every seed's change but 001's: its per-CPU data without %gs is
# for a uniprocessor, which Linux refused on SMP; config.h refuses the combination).
SMP_VARIANTS = [with_setting(variant, "smp") for variant in [
    _variant([]),
    _variant([key for key in SEED_KEYS if key != "pda"]),
]]

# Every x86-64 image built and embedded: the seed builds first (the baseline is the
# default), then their debugreg=pv, signal=pv and smp=on counterparts.
X86_VARIANTS = VARIANTS + PV_VARIANTS + SIGNAL_PV_VARIANTS + SMP_VARIANTS

# The MIPS images (guest-kit/BUILD.bazel, kernel-mips-<id>.elf), chosen the same way.
MIPS_VARIANTS = _variants(MIPS_SEED_KEYS)

def variant_table_cc_lines(symbol_prefix, keys = SEED_KEYS, variants = X86_VARIANTS, settings = SETTINGS.keys()):
    """X-macro lines for vmm/app/images/embedded_images.cc:
    SIGVISOR_SEED(key, old, new, seed, config) for each seed, and
    SIGVISOR_SEED(key, default, other, "", config) for each setting, then
    SIGVISOR_VARIANT(symbol, name, value...) for each built variant. (For the MIPS
    images: keys = MIPS_SEED_KEYS, variants = MIPS_VARIANTS, settings = [].)"""
    lines = []
    for key in keys:
        config, old, new, seed = SEEDS[key]
        lines.append('SIGVISOR_SEED("%s", "%s", "%s", "%s", "%s")' % (key, old, new, seed, config))
    for key in settings:
        config, default, other = SETTINGS[key]
        lines.append('SIGVISOR_SEED("%s", "%s", "%s", "", "%s")' % (key, default, other, config))
    for variant in variants:
        values = ['"%s"' % (SEEDS[key][2] if variant[key] else SEEDS[key][1]) for key in keys]
        values += ['"%s"' % (SETTINGS[key][2] if variant.get(key) else SETTINGS[key][1]) for key in settings]
        symbol = symbol_prefix + variant_id(variant).replace("-", "_")
        lines.append('SIGVISOR_VARIANT(%s, "%s", %s)' % (symbol, variant_name(variant), ", ".join(values)))
    return lines
