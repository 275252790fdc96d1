# mpi spawner (spawners/mpi/README.md): sluicerun -spawner=mpi runs the job
# under an MPI's mpirun; the ranks bootstrap over MPI (libsluice-mpi).  Its
# default mpirun is the one of the default MPI (configure.ac found it).
AC_DEFINE_UNQUOTED([SLUICE_MPIRUN_DEFAULT], ["$MPIRUN"], [mpirun of the default MPI, for sluicerun -spawner=mpi])
