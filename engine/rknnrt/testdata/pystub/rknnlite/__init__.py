# A stand-in for rknn-toolkit-lite2's rknnlite package in engine/rknnrt's
# tests (the real one runs only on a Rockchip board): same class, methods
# and constants as the calls the helper makes.
__version__ = "0.0-stub"
