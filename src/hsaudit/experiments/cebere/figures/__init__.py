"""Figure builders: one module per experiment family, each turning audit tables into ``figN.pdf`` + ``figN.csv``."""
