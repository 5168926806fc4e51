"""aot/cutedsl"""
