# mpi spawner (spawners/mpi/README.md): sluicerun -spawner=mpi runs the job
# under an MPI's mpirun; the ranks bootstrap over MPI (libsluice-mpi).
