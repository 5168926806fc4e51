"""aot/cutile"""
