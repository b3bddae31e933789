/* The part of the Fortran module that needs C: an MPI communicator handle
 * from Fortran (`use mpi` INTEGER, or mpi_f08's MPI_VAL) becomes a C
 * MPI_Comm only through MPI_Comm_f2c. */
#include <mpi.h>

#include "chorus.h"

chorus_result_t chorus_comm_create_f(MPI_Fint mpi_comm, chorus_comm_t* comm);

chorus_result_t chorus_comm_create_f(MPI_Fint mpi_comm, chorus_comm_t* comm) {
    return chorus_comm_create(MPI_Comm_f2c(mpi_comm), comm);
}
