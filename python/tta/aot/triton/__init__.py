"""aot/triton"""
