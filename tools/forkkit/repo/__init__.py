"""repo: the series as this repository stores them and the kernel tree they
are laid out in: git, series directories, the Debian archive, worktrees,
branches, import, save-back, the replay of a rebase, MAINTAINERS."""
