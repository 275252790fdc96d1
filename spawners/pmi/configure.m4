# pmi spawner (spawners/pmi/README.md): PMIx and PMI2 client bootstraps.
