"""How submitgen's own processes are bounded: each command's CPU and memory budget (budgets) and
children that die with their parent (lifetime), and the cyclic collector paused for a block that
makes millions of objects (collector). A tool, not a stage: the CLI, the readers, the
plan's child, the toolchain and evaluate use it."""
