//! `cuzk.v1.ProvingEngine` over the [`Daemon`]: each method is a thin translation, and
//! every refusal is counted by its gRPC code.
use tonic::{Request, Response, Status};

use super::daemon::Daemon;
use super::pb::proving_engine_server::ProvingEngine;
use super::pb::*;

/// The gRPC service.
pub struct Service {
    daemon: Daemon,
}

impl Service {
    pub fn new(daemon: Daemon) -> Self {
        Service { daemon }
    }

    fn counted<T>(&self, r: Result<T, Status>) -> Result<Response<T>, Status> {
        r.map(Response::new).inspect_err(|status| {
            self.daemon.metrics().refused(status.code());
            tracing::debug!(code = ?status.code(), message = status.message(), "refused");
        })
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(
        &self,
        request: Request<SubmitProofRequest>,
    ) -> Result<Response<SubmitProofResponse>, Status> {
        let r = self.daemon.submit(request.into_inner()).await.map(|(job_id, queue_position)| {
            SubmitProofResponse { job_id, queue_position, assigned_gpu: String::new() }
        });
        self.counted(r)
    }

    async fn await_proof(
        &self,
        request: Request<AwaitProofRequest>,
    ) -> Result<Response<AwaitProofResponse>, Status> {
        let req = request.into_inner();
        let r = self.daemon.await_job(&req.job_id, req.timeout_ms).await;
        self.counted(r)
    }

    async fn prove(&self, request: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        let r = async {
            let submit = request
                .into_inner()
                .submit
                .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
            let (job_id, _) = self.daemon.submit(submit).await?;
            let result = self.daemon.await_job(&job_id, 0).await?;
            Ok(ProveResponse { result: Some(result) })
        }
        .await;
        self.counted(r)
    }

    async fn cancel_proof(
        &self,
        request: Request<CancelProofRequest>,
    ) -> Result<Response<CancelProofResponse>, Status> {
        let r = self
            .daemon
            .cancel(&request.into_inner().job_id)
            .map(|was_running| CancelProofResponse { was_running });
        self.counted(r)
    }

    async fn get_status(&self, _: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        Ok(Response::new(self.daemon.status().await))
    }

    async fn get_metrics(
        &self,
        _: Request<GetMetricsRequest>,
    ) -> Result<Response<GetMetricsResponse>, Status> {
        Ok(Response::new(GetMetricsResponse { prometheus_text: self.daemon.metrics_text() }))
    }

    async fn preload_srs(
        &self,
        request: Request<PreloadSrsRequest>,
    ) -> Result<Response<PreloadSrsResponse>, Status> {
        let r = self
            .daemon
            .preload(&request.into_inner().circuit_id)
            .await
            .map(|(already_loaded, load_time_ms)| PreloadSrsResponse { already_loaded, load_time_ms });
        self.counted(r)
    }

    async fn evict_srs(
        &self,
        request: Request<EvictSrsRequest>,
    ) -> Result<Response<EvictSrsResponse>, Status> {
        let r = self
            .daemon
            .evict(&request.into_inner().circuit_id)
            .await
            .map(|(was_loaded, freed_bytes)| EvictSrsResponse { was_loaded, freed_bytes });
        self.counted(r)
    }
}
