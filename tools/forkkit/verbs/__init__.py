"""verbs: one module per verb of tools/fork (cli.VERBS): its help (the
module's text and HELP), its arguments (add_arguments) and main(args),
which puts the lower layers together.  A verb never imports another verb."""
