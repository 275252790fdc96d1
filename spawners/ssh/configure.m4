# ssh spawner (spawners/ssh/README.md): sluicerun starts a tree of control
# processes over ssh, one per host.
