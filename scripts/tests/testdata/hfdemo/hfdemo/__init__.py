# The package the wheel-cache tests build.
FLAG = "built"
