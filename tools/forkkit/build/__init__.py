"""build: what makes a kernel image of a commit: the build worktree and
make (make), the config flavours (kconfig), the W=1/sparse recompile of
the touched files (patchcheck), and the build itself with its store of
images (kbuild).  The hash of every module here keys every stored image
(kbuild.build_key())."""
