package goldentest

// DCGMLabPage is a hand-written dcgm-exporter HEAD page (lower-case hostname, 2026), the
// golden fixture's dcgm-lab agent, with profiling fields on GPU 0 only, and DCGM blank
// sentinels of the three families on fields the catalogue reads: GR_ENGINE_ACTIVE of GPU 2
// is DCGM_FP64_BLANK (2^47), FB_USED of GPU 1 DCGM_INT64_BLANK (0x7ffffffffffffff0),
// GPU_TEMP of GPU 1 DCGM_INT32_BLANK (0x7ffffff0).
const DCGMLabPage = `# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-lab1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 88
DCGM_FI_DEV_GPU_UTIL{gpu="2",UUID="GPU-lab2",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 12
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0.412000
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0.950000
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-lab1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0.830000
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="2",UUID="GPU-lab2",device="nvidia2",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 140737488355328.000000
# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0.671000
# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0.233000
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 74000
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-lab1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 9223372036854775792
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 612.345000
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 71
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-lab1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 2147483632
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 1755
# TYPE DCGM_FI_DEV_CLOCKS_EVENT_REASONS gauge
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",UUID="GPU-lab0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 580
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="1",UUID="GPU-lab1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="lab-1",DCGM_FI_DRIVER_VERSION="570.86.15"} 0
`
