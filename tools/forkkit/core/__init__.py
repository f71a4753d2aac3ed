"""core: what every other layer uses and that uses nothing of the kit:
errors, paths, processes, locks, progress lines, records and tables."""
