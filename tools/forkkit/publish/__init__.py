"""publish: the series as mails for the mailing list (export)."""
