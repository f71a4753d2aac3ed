"""The ext2 scalability fork kit: one CLI (tools/fork), one module per verb."""
