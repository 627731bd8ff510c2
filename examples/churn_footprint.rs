//! The benchmark's churn workload on a simulated device, for the footprint figure alone
//! (peak bytes reserved from upstream over peak live bytes), which does not depend on timing:
//!   RMM_SIM_DEVICES=1:64GiB RMM_SIM_ON_RACE=off cargo run --release --example churn_footprint

use rmm::platform::Stream;
use rmm::resources::{
    expandable_resource, ArenaResource, BinningResource, DirectResource, ExpandableOptions, MemoryResource, PoolResource,
};
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn log_uniform(&mut self, lo: f64, hi: f64) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (lo.ln() + u * (hi.ln() - lo.ln())).exp() as usize
    }
}

fn churn(resource: &dyn MemoryResource, footprint: &dyn Fn() -> usize) -> f64 {
    let mut rng = Rng(7u64.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1));
    let mut live: Vec<(usize, usize)> = Vec::new();
    let (mut live_bytes, mut peak_live, mut peak_reserved) = (0usize, 0usize, 0usize);
    for _ in 0..1000 {
        let size = rng.log_uniform(256.0, (16 << 20) as f64);
        live.push((resource.allocate(size, Stream::DEFAULT).unwrap(), size));
        live_bytes += size;
    }
    peak_live = peak_live.max(live_bytes);
    for _ in 0..20000 {
        let victim = (rng.next() % live.len() as u64) as usize;
        let (ptr, size) = live[victim];
        resource.deallocate(ptr, size, Stream::DEFAULT).unwrap();
        live_bytes -= size;
        let size = rng.log_uniform(256.0, (16 << 20) as f64);
        live[victim] = (resource.allocate(size, Stream::DEFAULT).unwrap(), size);
        live_bytes += size;
        peak_live = peak_live.max(live_bytes);
        peak_reserved = peak_reserved.max(footprint());
    }
    for (ptr, size) in live {
        resource.deallocate(ptr, size, Stream::DEFAULT).unwrap();
    }
    peak_reserved as f64 / peak_live as f64
}

fn main() {
    let cuda: Arc<dyn MemoryResource> = Arc::new(DirectResource::cuda(0).unwrap());
    let pool = Arc::new(PoolResource::new(cuda.clone(), 0, 0).unwrap());
    println!("pool footprint: {:.3}", churn(&*pool, &|| pool.pool_size().unwrap()));
    let binning_pool = Arc::new(PoolResource::new(cuda.clone(), 0, 0).unwrap());
    let binning = BinningResource::new(binning_pool.clone(), 8, 20).unwrap();
    println!("binning footprint: {:.3}", churn(&binning, &|| binning_pool.pool_size().unwrap()));
    let arena = ArenaResource::new(cuda, 0).unwrap();
    println!("arena footprint: {:.3}", churn(&arena, &|| arena.pool_size().unwrap()));
    let expandable = expandable_resource(0, &Default::default()).unwrap();
    println!("expandable footprint: {:.3}", churn(&expandable, &|| expandable.pool_size().unwrap()));
    let small_pages = expandable_resource(0, &ExpandableOptions { page_size: 2 << 20, ..Default::default() }).unwrap();
    println!("expandable footprint, 2 MiB pages: {:.3}", churn(&small_pages, &|| small_pages.pool_size().unwrap()));
}
