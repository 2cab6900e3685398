"""Stand-in torch.backends (see ../README.md)."""


class cuda:  # noqa: N801
    @staticmethod
    def preferred_rocm_fa_library():
        return "_ROCmFABackend.AOTriton"
